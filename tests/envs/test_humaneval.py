"""code/humaneval-v1: every canonical solution passes, a broken variant of each fails."""

from __future__ import annotations

import pytest

from tempering.envs import check_env, make
from tempering.errors import TaskError


@pytest.fixture(scope="module")
def env(shared_sandbox):
    return make("code/humaneval-v1")


def test_all_164_canonical_solutions_pass_and_broken_variants_fail(env):
    report = check_env("code/humaneval-v1", n=0)
    assert report.checked == 164
    assert report.problems == []


def test_tasks_are_the_wheel_data(env):
    assert env.size("test") == 164 and env.size("train") == 0
    t = env.task("test", 0)
    assert t.id == "HumanEval/0" and "has_close_elements" in t.prompt[0].content
    with pytest.raises(TaskError, match="only split"):
        env.task("train", 0)


def test_a_model_style_reply_is_scored(env):
    t = env.task("test", 0)
    reply = ("Sure!\n```python\ndef has_close_elements(numbers, threshold):\n"
             "    return any(abs(a - b) < threshold for i, a in enumerate(numbers) for b in numbers[i + 1:])\n```")
    assert env.verify(t, reply).passed
    env.reset(t)
    step = env.step("```python\ndef has_close_elements(numbers, threshold):\n    return True\n```")
    assert step.terminated and step.reward == 0.0 and step.info["status"] == "failed"
