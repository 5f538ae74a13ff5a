"""The env contract (envs/protocols.py): every registered env meets it, and each optional
hook is found by its protocol, the way check_env, the agent loop and `temper eval` ask."""

from __future__ import annotations

import pytest

from tempering import envs
from tempering.sandbox.fake import CannedSandbox
from tempering.types import ExecResult, Score, StepResult, Task

NATIVE = [e for e in envs.list() if not e.startswith("reasoning/")] + ["reasoning/leg_counting-v1"]


@pytest.mark.parametrize("env_id", NATIVE)
def test_every_env_is_an_env_and_a_task_set(env_id):
    env = envs.make(env_id)
    assert isinstance(env, envs.Env) and isinstance(env, envs.TaskSet)
    assert set(envs.splits_of(env)) <= {*envs.SPLITS, "unseen"}


def test_hooks_are_found_by_protocol():
    assert isinstance(envs.make("code/humaneval-v1"), envs.FixedSize)
    assert not isinstance(envs.make("math/arith-v1"), envs.FixedSize)
    assert isinstance(envs.make("code/repair-v1"), envs.CompressesContext)
    assert isinstance(envs.make("code/repair-v1"), envs.MultiTurn)
    assert not isinstance(envs.make("code/synth-v1"), envs.MultiTurn)
    assert isinstance(envs.make("sql/sqlite-v1"), envs.BrokenReference)
    assert not isinstance(envs.make("math/arith-v1"), envs.BrokenReference)
    assert envs.families_of(envs.make("math/arith-v1")) and envs.families_of(object()) == ()
    assert envs.splits_of(object()) == envs.SPLITS and not envs.verifies_concurrently(object())


def test_typed_fields_read_what_the_producer_left_in_its_dict():
    score = Score(0.0, False, {"status": "timeout", "feedback": "too slow", "format_ok": True, "extracted": 3})
    assert (score.status, score.feedback, score.format_ok, score.extracted) == ("timeout", "too slow", True, 3)
    assert Score(1.0, True, status="passed").status == "passed"  # or the producer sets the field
    step = StepResult((), 0.5, False, True, {"passed": False, "progress": 0.5, "truncated_by": "turns"})
    assert (step.passed, step.progress, step.truncated_by, step.status) == (False, 0.5, "turns", None)
    task = Task("t", "d", (), None, {"family": "add"})
    assert task.family == "add" and Task("t", "d", (), None).family is None


def test_a_canned_sandbox_drives_a_verifier_to_any_outcome():
    timeout = ExecResult(status="timeout", exit_code=None, stdout="", stderr="", wall_s=10.0, cpu_s=10.0,
                         peak_memory_mb=3.0, detail="wall time limit")
    from tempering.envs.code.humaneval import HumanEvalEnv

    box = CannedSandbox([timeout])
    env = HumanEvalEnv(sandbox=box)
    task = env.task("test", 0)
    score = env.verify(task, env.reference_response(task))
    assert not score.passed and score.status == "timeout"
    assert len(box.calls) == 1 and "solution.py" in box.calls[0].files
    with pytest.raises(AssertionError, match="only 1 results"):
        box.run("print(1)")
