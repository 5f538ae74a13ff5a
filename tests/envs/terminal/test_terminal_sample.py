"""The Terminal-Bench sample: the oracle scores 1 and noop 0 on every task this host can run;
every other task is skipped with a named reason."""

from __future__ import annotations

import pytest

from tempering.envs.terminal import NoopAgent, OracleAgent, load_tasks, run_trial

QUICK = ("fix-permissions", "hello-world", "sqlite-db-truncate")
"""A fast subset for every test run; the whole sample is the slow test below."""


def _check(task, sandbox) -> str:
    oracle = run_trial(task, OracleAgent(), sandbox)
    if oracle.status == "skipped":
        assert oracle.reason.strip(), f"{task.id}: skipped without a reason"
        noop = run_trial(task, NoopAgent(), sandbox)
        assert noop.status == "skipped" and noop.reason == oracle.reason
        return "skipped"
    assert oracle.status == "passed", f"{task.id}: oracle {oracle.status}: {oracle.reason}"
    noop = run_trial(task, NoopAgent(), sandbox)
    assert noop.status == "failed" and noop.reward == 0.0, f"{task.id}: noop {noop.status}: {noop.reason}"
    return "ran"


def test_quick_sample_tasks(sample_dir, shared_sandbox):
    tasks = load_tasks(sample_dir, only=tuple(t for t in QUICK if (sample_dir / t).is_dir()))
    assert tasks and all(_check(t, shared_sandbox) == "ran" for t in tasks)


@pytest.mark.slow
def test_every_sample_task(sample_dir, shared_sandbox):
    outcomes = {t.id: _check(t, shared_sandbox) for t in load_tasks(sample_dir)}
    assert list(outcomes.values()).count("ran") >= len(QUICK), outcomes


def test_the_shipped_native_examples(shared_sandbox):
    """examples/terminal-tasks: native tasks that ship with the project, all runnable here."""
    from pathlib import Path

    tasks = load_tasks(Path(__file__).parents[3] / "examples" / "terminal-tasks")
    assert sorted(t.id for t in tasks) == ["count-errors", "fix-backup-script", "project-skeleton", "region-totals"]
    assert all(_check(t, shared_sandbox) == "ran" for t in tasks)
