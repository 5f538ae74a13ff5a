"""Shared by the env tests: terminal/tb-v1 reads a directory of tasks, the Terminal-Bench
sample in ../shared when the checkout has one; a clone without it uses the native tasks
the repository ships (examples/terminal-tasks)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tempering.envs.terminal.env import default_tasks_dir
from tempering.errors import TaskError

EXAMPLE_TASKS = Path(__file__).resolve().parents[2] / "examples" / "terminal-tasks"


@pytest.fixture(autouse=True)
def terminal_tasks(monkeypatch):
    try:
        default_tasks_dir()
    except TaskError:
        monkeypatch.setenv("TEMPERING_TERMINAL_TASKS", str(EXAMPLE_TASKS))
