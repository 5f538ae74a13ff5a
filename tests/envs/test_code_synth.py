"""code/synth-v1 and code/repair-v1: every family's reference passes and a broken one fails;
the held-out families are only in the unseen split, spread over the kinds; repair episodes
feed back the failing example."""

from __future__ import annotations

import random

import pytest

from tempering.envs import check_env, make
from tempering.envs.code.envs import RepairEnv, SynthEnv
from tempering.envs.code.synth import FAMILIES, FAMILY_NAMES, UNSEEN_FAMILIES, build
from tempering.errors import TaskError

KINDS = ("strings", "lists", "numbers", "dicts", "parsing", "recursion", "grids")


def test_there_are_at_least_60_families_over_the_seven_kinds():
    assert len(FAMILIES) >= 60
    assert len({f.name for f in FAMILIES}) == len(FAMILIES)
    assert {f.kind for f in FAMILIES} == set(KINDS)


def test_the_held_out_families_are_spread_over_the_kinds_each_beside_trained_ones():
    assert len(UNSEEN_FAMILIES) >= 10 and set(FAMILY_NAMES) | set(UNSEEN_FAMILIES) == {f.name for f in FAMILIES}
    assert not set(FAMILY_NAMES) & set(UNSEEN_FAMILIES)
    held = [f.kind for f in FAMILIES if f.name in UNSEEN_FAMILIES]
    trained = [f.kind for f in FAMILIES if f.name in FAMILY_NAMES]
    assert set(held) == set(KINDS) and max(held.count(k) for k in KINDS) <= 2
    assert all(trained.count(k) >= 2 for k in KINDS)


@pytest.mark.parametrize("env", [SynthEnv(), RepairEnv()], ids=["synth", "repair"])
def test_unseen_draws_only_held_out_families_and_train_test_never_do(env):
    drawn = {split: [env.task(split, i).metadata["family"] for i in range(n)]
             for split, n in (("train", 200), ("test", 50), ("unseen", 50))}
    assert not set(drawn["train"] + drawn["test"]) & set(UNSEEN_FAMILIES)
    assert set(drawn["unseen"]) <= set(UNSEEN_FAMILIES) and len(set(drawn["unseen"])) >= 8
    assert env.splits == ("train", "test", "unseen") and env.unseen_families == UNSEEN_FAMILIES
    with pytest.raises(TaskError, match="no task family 'caesar' in split train"):
        env.task("train", 0, family="caesar")


@pytest.mark.parametrize("env_id", ["code/synth-v1", "code/repair-v1"])
def test_check_env_over_the_three_splits(shared_sandbox, env_id):
    report = check_env(env_id, n=5)
    assert report.ok, report.problems
    assert report.checked == 15


@pytest.fixture(scope="module")
def synth(shared_sandbox):
    return SynthEnv()


def test_every_family_reference_passes_and_its_broken_variant_fails(synth):
    from concurrent.futures import ThreadPoolExecutor

    tasks = [synth.task("unseen" if f.name in UNSEEN_FAMILIES else "train", 0, family=f.name) for f in FAMILIES]
    tasks += synth.tasks("unseen", 10)
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


def test_repair_status_is_the_hidden_verdict_not_the_examples(repair):
    """A reply that answers the prompt's examples by rote passes them and fails the hidden
    tests: the episode's status says failed (the examples' own result is visible_status)."""
    task = _task(repair)
    table = {c["args"][0]: c["expected"] for c in task.reference.metadata["visible"]}
    rote = f"```python\ndef count_vowels(s):\n    return {table!r}.get(s, -1)\n```"
    repair.reset(task)
    end = repair.step(rote)
    assert end.terminated and not end.info["passed"]
    assert (end.info["visible_status"], end.info["status"]) == ("passed", "failed")
    repair.reset(task)
    right = repair.step(RIGHT)
    assert (right.info["visible_status"], right.info["status"], right.info["passed"]) == ("passed", "passed", True)


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
