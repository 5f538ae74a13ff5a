"""Fixtures for the terminal task runner: a native task factory and the TB sample directory."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

ANSWER_TESTS = textwrap.dedent('''
    from pathlib import Path

    def test_answer_file():
        assert Path("/app/answer.txt").read_text().strip() == "42"

    def test_seed_untouched():
        assert Path("/app/data/seed.txt").read_text() == "6 7\\n"
''')


def write_native(root: Path, name: str = "answer", *, tests: str = ANSWER_TESTS, solution: str | None = None,
                 **config) -> Path:
    """A native task: files/data/seed.txt holds "6 7"; the solution writes their product
    to /app/answer.txt; the tests check it."""
    d = root / name
    (d / "files" / "data").mkdir(parents=True)
    (d / "files" / "data" / "seed.txt").write_text("6 7\n")
    (d / "tests").mkdir()
    (d / "tests" / "test_answer.py").write_text(tests)
    cfg = {"instruction": "Multiply the two numbers in data/seed.txt and write the product to /app/answer.txt.",
           "category": "arithmetic", "difficulty": "easy", "max_agent_timeout_sec": 60,
           "max_test_timeout_sec": 30,
           "setup": "mkdir -p /app/out && echo ready > /app/out/setup.txt",
           "solution": solution if solution is not None else
           "read a b < data/seed.txt\necho $((a * b)) > /app/answer.txt\n", **config}
    (d / "task.yaml").write_text(yaml.safe_dump(cfg))
    return d


@pytest.fixture
def native(tmp_path):
    return write_native(tmp_path)


@pytest.fixture(scope="session")
def sample_dir() -> Path:
    from tempering.envs.terminal.env import default_tasks_dir
    from tempering.errors import TaskError

    try:
        return default_tasks_dir()
    except TaskError:
        pytest.skip("no Terminal-Bench sample (set TEMPERING_TERMINAL_TASKS)")


@pytest.fixture(name="write_native")
def write_native_fixture():
    """write_native, for tests that build native tasks of their own."""
    return write_native
