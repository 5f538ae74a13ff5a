"""reasoning/<name>-v1: every registered reasoning-gym env generates tasks and accepts its own gold answer."""

from __future__ import annotations

import pytest

from tempering import envs
from tempering.envs.base import split_of
from tempering.envs.reasoning import gym
from tempering.types import Task

REASONING_IDS = [e for e in envs.list() if e.startswith("reasoning/")]
# A spread of categories (arithmetic, strings, games, ARC, code) that are fast to generate.
SAMPLE_IDS = ["reasoning/basic_arithmetic-v1", "reasoning/spell_backward-v1", "reasoning/maze-v1",
              "reasoning/arc_1d-v1", "reasoning/bf-v1", "reasoning/sentence_reordering-v1"]


def test_registry_has_every_usable_generator() -> None:
    assert len(REASONING_IDS) >= 80
    assert all(e.startswith("reasoning/") and e.endswith("-v1") for e in REASONING_IDS)
    names = {e.removeprefix("reasoning/").removesuffix("-v1") for e in REASONING_IDS}
    assert names == set(gym.dataset_names()) - set(gym.EXCLUDED)
    # An EXCLUDED name reasoning-gym no longer has means the probe is stale: re-probe on upgrade.
    assert set(gym.EXCLUDED) <= set(gym.dataset_names())


# Measured: about 8 s for all 93 envs plus ~3 s importing reasoning-gym; futoshiki alone takes ~2 s.
@pytest.mark.parametrize("env_id", REASONING_IDS)
def test_reference_response_passes(env_id: str) -> None:
    env = envs.make(env_id)
    task = env.task("train", 0)
    assert isinstance(task, Task)
    assert task.reference is not None and task.prompt[0].role == "user"
    score = env.verify(task, env.reference_response(task))
    assert score.passed and score.value == pytest.approx(1.0), (env_id, task.reference, score)
    # reasoning-gym gives 0.01-0.05 to any answer in some scorers; an empty reply must earn nothing.
    assert env.verify(task, "").value == 0.0 and env.verify(task, "I am not sure.\nAnswer:").value == 0.0


@pytest.mark.parametrize("env_id", SAMPLE_IDS)
def test_wrong_answer_scores_below_one(env_id: str) -> None:
    env = envs.make(env_id)
    score = env.verify(env.task("train", 0), "Answer: definitely-wrong-xyz")
    assert score.value < 1.0 and not score.passed
    assert score.details["extracted"] == "definitely-wrong-xyz"


@pytest.mark.parametrize("env_id", SAMPLE_IDS[:3])
def test_splits_are_disjoint_and_deterministic(env_id: str) -> None:
    env = envs.make(env_id)
    train, test = env.task("train", 0), env.task("test", 0)
    assert train.prompt != test.prompt
    assert split_of(train.prompt[0].content) == "train"
    assert split_of(test.prompt[0].content) == "test"
    assert env.task("test", 0) == test


@pytest.mark.parametrize("response, expected", [
    ("Let me think.\nAnswer: 42", "42"),
    ("answer: 1\n**Answer:** `7`", "7"),
    ("Answer: <answer>cat</answer>", "cat"),
    ("Answer:\n```\n1 2\n3 4\n```", "1 2\n3 4"),
    ("no marker here\n\n  last line  \n", "last line"),
    ("", ""),
])
def test_extract_answer(response: str, expected: str) -> None:
    assert gym.extract_answer(response) == expected


def test_scorer_crash_scores_zero() -> None:
    env = envs.make("reasoning/basic_arithmetic-v1")
    task = env.task("train", 0)
    broken = Task(task.id, task.domain, task.prompt, task.reference, {**task.metadata, "entry": {}})
    score = env.verify(broken, "Answer: 3")
    assert score.value == 0.0 and not score.passed and "error" in score.details
