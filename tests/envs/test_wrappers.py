"""Turn and token limits as env wrappers, alone and inside run_episode."""

from __future__ import annotations

import pytest

from tempering.envs.wrappers import TokenLimit, TurnLimit
from tempering.errors import TaskError
from tempering.types import Message, StepResult, Task

TASK = Task(id="t", domain="test", prompt=(Message("user", "go"),), reference=None)


class Endless:
    id = "test/endless-v0"

    def reset(self, task):
        return list(task.prompt)

    def step(self, action):
        return StepResult((Message("user", "again"),), 0.5, False, False, {})


def test_turn_limit_truncates_on_the_last_allowed_turn():
    env = TurnLimit(Endless(), 2)
    env.reset(TASK)
    assert not env.step("a").truncated
    last = env.step("b")
    assert last.truncated and not last.terminated and last.info["truncated_by"] == "turns" and last.reward == 0.5
    env.reset(TASK)
    assert not env.step("a").truncated  # reset starts the count again
    assert env.id == "test/endless-v0"


def test_token_limit(tiny):
    env = TokenLimit(Endless(), tiny.tokenizer, 5)
    env.reset(TASK)
    assert not env.step("hi").truncated
    assert env.step("one two three four five six").info["truncated_by"] == "tokens"


def test_bad_limits():
    with pytest.raises(TaskError):
        TurnLimit(Endless(), 0)


def test_run_episode_stops_on_a_wrapped_limit(tiny):
    from tempering.rollout import run_episode
    from tempering.rollout.fake import ScriptedClient
    from tempering.types import SamplingParams

    echo = ScriptedClient(tiny.tokenizer, ["ok"], repeat_last=True)
    traj = run_episode(TurnLimit(Endless(), 3), TASK, echo, SamplingParams(max_new_tokens=4))
    assert len(traj.turns) == 3 and traj.truncated and traj.stop_reason == "turns"
