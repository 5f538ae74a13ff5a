"""Domain quotas, the family curriculum and replay of tasks with mixed outcomes."""

from __future__ import annotations

import random

import pytest

from tempering import envs
from tempering.config import EnvConfig, load_config
from tempering.envs import SingleTurnEnv
from tempering.errors import ConfigError
from tempering.scheduler.priorities import TaskSampler, quotas
from tempering.trainer import prepare_run, train
from tempering.types import Message, Score, Task


def test_quotas_split_exactly_by_weight():
    assert quotas({"a": 2.0, "b": 1.0}, 6) == {"a": 4, "b": 2}
    assert quotas({"a": 1.0, "b": 1.0, "c": 1.0}, 4) == {"a": 2, "b": 1, "c": 1}
    assert sum(quotas({"a": 0.7, "b": 0.2, "c": 0.1}, 7).values()) == 7


def _three_family_env() -> SingleTurnEnv:
    """Family easy is always solved, hard never, mid half the time (decided per attempt)."""
    def generate(rng, family):
        family = family or rng.choice(("easy", "hard", "mid"))  # without a curriculum: uniform
        return Task(id="", domain="toy", prompt=(Message("user", f"{family} {rng.random()}"),), reference=family)

    return SingleTurnEnv("toy/three-v1", generate, lambda t, r: Score(1.0, True), lambda t: "",
                         families=("easy", "hard", "mid"))


def _simulate(sampler: TaskSampler, rounds: int, k: int = 8, g: int = 4, seed: int = 0) -> list[list]:
    rng, outcome = random.Random(seed), random.Random(seed + 1)
    drawn = []
    for _ in range(rounds):
        batch = sampler.draw(rng, k)
        drawn.append(batch)
        for task, fam in batch:
            p = {"easy": 1.0, "hard": 0.0, "mid": 0.5}[task.reference]
            passed = [outcome.random() < p for _ in range(g)]
            sampler.update(task, fam, passed, informative=len(set(passed)) > 1)
    return drawn


def test_curriculum_shifts_sampling_toward_mixed_outcomes():
    sampler = TaskSampler(_three_family_env(), "train", curriculum=True)
    drawn = _simulate(sampler, 40)
    share = lambda batches: sum(t.reference == "mid" for b in batches for t, _ in b) / sum(len(b) for b in batches)  # noqa: E731
    assert share(drawn[:2]) < 0.5
    assert share(drawn[-10:]) > 0.6  # uniform would be 1/3
    uniform = _simulate(TaskSampler(_three_family_env(), "train", curriculum=False), 40)
    assert abs(share(uniform[-10:]) - 1 / 3) < 0.15


def test_replay_revisits_tasks_whose_pass_rate_is_neither_0_nor_1():
    sampler = TaskSampler(_three_family_env(), "train", curriculum=False, replay=0.5)
    drawn = _simulate(sampler, 30)
    ids = [t.id for b in drawn for t, _ in b]
    repeats = len(ids) - len(set(ids))
    assert repeats > 0.3 * len(ids)
    for tid in {i for i in ids if ids.count(i) > 1}:
        assert 0 < sampler.stats[tid].rate < 1 or sampler.stats[tid].attempts > 4
    replayed = [t for b in drawn[10:] for t, _ in b if ids.count(t.id) > 1]
    assert all(t.reference == "mid" for t in replayed[1:])  # only tasks that were mixed get drawn again
    state = sampler.state_dict()
    again = TaskSampler(_three_family_env(), "train", curriculum=False, replay=0.5)
    again.load_state_dict(state)
    assert [t.id for t, _ in again.draw(random.Random(7), 8)] == [t.id for t, _ in sampler.draw(random.Random(7), 8)]


def test_mixed_env_routes_tasks_and_meets_quotas():
    env = envs.make_from_config(EnvConfig(id="mix", mix={"math/arith-v1": 2.0, "reasoning/basic_arithmetic-v1": 1.0}))
    sampler = TaskSampler(env, "train")
    batch = sampler.draw(random.Random(0), 6)
    assert [t.domain for t, _ in batch].count("math") == 4
    math_task = next(t for t, _ in batch if t.domain == "math")
    assert env.verify(math_task, env.reference_response(math_task)).passed
    other = next(t for t, _ in batch if t.domain != "math")
    assert env.verify(other, env.reference_response(other)).passed
    assert not env.verify(math_task, "no idea").passed


@pytest.mark.parametrize("sets, message", [
    (["env.mix={math/arith-v1: 1.0}"], "set env.id to mix"),
    (["env.id=mix"], "env.mix is empty"),
    (["env.id=mix", "env.mix={math/arith-v1: 0}"], "must be positive"),
])
def test_bad_mix_settings_get_one_clear_error(tmp_path, sets, message):
    cfg = load_config("configs/tiny-cpu.yaml", sets)
    with pytest.raises(ConfigError, match=message):
        prepare_run(cfg, tmp_path / "r")


def test_multi_domain_training_reports_each_domain(tmp_path):
    cfg = load_config("configs/tiny-cpu.yaml", ["env.id=mix", "env.mix={math/arith-v1: 1.0, reasoning/basic_arithmetic-v1: 1.0}",
                                                "algorithm.beta=0", "train.replay=0.5"])
    prepare_run(cfg, tmp_path / "r")
    m = train(cfg, tmp_path / "r", steps=1, progress=False)[0]
    assert m["share/math/arith-v1"] == m["share/reasoning/basic_arithmetic-v1"] == 0.5
    assert 0.0 <= m["pass_rate/math/arith-v1"] <= 1.0
    domains = ("math/arith-v1", "reasoning/basic_arithmetic-v1")
    assert sum(m[f"reward/{d}"] * m[f"share/{d}"] for d in domains) == pytest.approx(m["reward_mean"])
