"""code/synth-v1 and code/repair-v1."""

from __future__ import annotations

import random

import pytest

from tempering.envs import make
from tempering.envs.code.envs import RepairEnv, SynthEnv
from tempering.envs.code.synth import FAMILIES, build
from tempering.errors import TaskError


def test_there_are_at_least_50_families_over_the_five_kinds():
    assert len(FAMILIES) >= 50
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)


@pytest.fixture(scope="module")
def synth(shared_sandbox):
    return SynthEnv()


def test_every_family_reference_passes_and_its_broken_variant_fails(synth):
    from concurrent.futures import ThreadPoolExecutor

    tasks = [synth.task("train", 0, family=f.name) for f in FAMILIES]
    with ThreadPoolExecutor(8) as pool:
        ref = list(pool.map(lambda t: synth.verify(t, synth.reference_response(t)), tasks))
        broken = list(pool.map(lambda t: synth.verify(t, synth.broken_response(t)), tasks))
    assert [t.id for t, s in zip(tasks, ref) if not s.passed] == []
    assert [t.id for t, s in zip(tasks, broken) if s.value >= 1.0] == []


def test_tasks_reproduce_and_carry_visible_and_hidden_cases(synth):
    a, b = synth.task("test", 3), synth.task("test", 3)
    assert a == b and a.reference.cases and len(a.reference.metadata["visible"]) == 3
    hidden = {repr(c["args"]) for c in a.reference.cases}
    visible = {repr(c["args"]) for c in a.reference.metadata["visible"]}
    assert len(hidden) == 10 and not hidden & visible
    for c in a.reference.metadata["visible"]:  # the examples are in the prompt
        assert repr(c["expected"]) in a.prompt[0].content
    assert build(FAMILIES[0], random.Random(5)) == build(FAMILIES[0], random.Random(5))


def test_reward_is_the_fraction_of_hidden_tests(synth):
    t = synth.task("train", 1, family="sum_above")
    import re

    k = int(re.search(r"x > (-?\d+)", t.reference.reference).group(1))
    half = f"```python\ndef sum_above(xs):\n    return sum(x for x in xs if x > {k}) if len(xs) % 2 else -999\n```"
    s = synth.verify(t, half)
    assert 0.0 < s.value < 1.0 and not s.passed


@pytest.fixture
def repair(shared_sandbox):
    return RepairEnv(max_turns=3)


def _task(env):
    return env.task("train", 2, family="count_vowels")


WRONG = "```python\ndef count_vowels(s):\n    return len(s)\n```"
CRASH = "```python\ndef count_vowels(s):\n    return undefined_name\n```"
RIGHT = "```python\ndef count_vowels(s):\n    return sum(ch in 'aeiouAEIOU' for ch in s)\n```"


def test_repair_feeds_back_the_failing_example_then_pays_on_the_fix(repair):
    task = _task(repair)
    repair.reset(task)
    first = repair.step(WRONG)
    assert not first.terminated and first.reward == 0.0
    msg = first.messages[0].content
    assert "expected" in msg and "attempt 2 of 3" in msg
    hidden_args = [repr(c["args"][0]) for c in task.reference.cases]
    assert not any(a in msg for a in hidden_args if len(a) > 4)  # never the hidden tests
    second = repair.step(CRASH)
    assert not second.terminated and "undefined_name" in second.messages[0].content
    third = repair.step(RIGHT)
    assert third.terminated and third.reward == 1.0 and third.info["turn"] == 3


def test_repair_ends_after_max_turns_with_the_hidden_score(repair):
    repair.reset(_task(repair))
    for _ in range(2):
        assert not repair.step(WRONG).terminated
    last = repair.step(WRONG)
    assert last.terminated and last.reward < 1.0 and not last.info["passed"]


def test_repair_reward_options(shared_sandbox):
    env = RepairEnv(max_turns=3, reward="binary", turn_cost=0.1)
    env.reset(_task(env))
    env.step(WRONG)
    assert env.step(RIGHT).reward == pytest.approx(0.9)
    with pytest.raises(TaskError):
        RepairEnv(reward="vibes")


def test_registered():
    assert make("code/synth-v1").id == "code/synth-v1"
    assert make("code/repair-v1").id == "code/repair-v1"
