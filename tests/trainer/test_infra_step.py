"""Infrastructure failures in a GRPO step: an attempt whose sandbox fails on every try trains
on nothing and moves no other attempt's advantage; one that clears on retry is scored as usual.

Replies are scripted (ScriptedClient) so which attempts lose the sandbox is fixed: a reply
holding BROKEN loses it on every run, one holding FLAKY on its first (LosingSandbox)."""

from __future__ import annotations

import statistics

import pytest
import torch

from tempering.config import load_config
from tempering.envs.fake import sandboxed_parity_env
from tempering.models import load
from tempering.rollout.fake import ScriptedClient
from tempering.sandbox.fake import LosingSandbox
from tempering.scheduler.store import Store
from tempering.trainer.alerts import AlertWatch
from tempering.trainer.group import Group
from tempering.trainer.rl import RLStep
from tempering.trainer.run import _optimizer

# 3 prompts x 4 attempts; "e"s are counted for the parity reward (even: 1), digits keep replies apart
REPLIES = ["ee 1", "e 2", "BROKEN 3", "e e e 4",           # group 0: one attempt lost -> trains on [1, 0, 0]
           "BROKEN 5", "BROKEN 6", "BROKEN 7", "ee 8",     # group 1: one real attempt left -> dropped
           "ee 9", "e 10", "eeee 11", "e 12"]              # group 2: whole -> [1, 0, 1, 0]
LOST = {2, 4, 5, 6}


def _cfg(**over):
    sets = {"algorithm.beta": 0, "optim.lr": 1e-3, "rollout.prompts_per_step": 3, "rollout.group_size": 4, **over}
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in sets.items()])


def _step(cfg, monkeypatch, replies, box):
    """An RLStep on the tiny model whose rollout samples `replies` in order, verified through `box`."""
    loaded = load("tiny-random")
    monkeypatch.setattr("tempering.scheduler.backends.make_client",
                        lambda *a, **k: ScriptedClient(loaded.tokenizer, replies))
    opt, sched = _optimizer(cfg, loaded.model)
    return RLStep(cfg, sandboxed_parity_env(box), loaded.model, loaded.tokenizer, opt, sched), loaded.model


def test_attempts_whose_sandbox_always_fails_are_left_out_of_training(tmp_path, monkeypatch):
    cfg = _cfg()
    box = LosingSandbox()
    step, model = _step(cfg, monkeypatch, REPLIES, box)
    step.store = Store(tmp_path / "store.sqlite")
    metrics = step.step(1)

    # each lost attempt was verified 1 + rollout.infra_retries times, on the same reply; the others once
    assert all(box.calls[r] == (3 if "BROKEN" in r else 1) for r in REPLIES)
    assert (metrics["infra/failed"], metrics["infra/retried"], metrics["infra/share"]) == (4, 8, 4 / 12)
    assert (metrics["groups_sampled"], metrics["groups_trained"]) == (3, 2)
    assert metrics["pass_rate"] == 4 / 8  # over the attempts really scored
    assert "infra" in [a.kind for a in AlertWatch(cfg.alerts).check([metrics])]  # a third lost: above 0.1
    episodes = {e.slot: e for e in step.store.episodes(1)}
    assert {s for s, e in episodes.items() if e.infra_failed} == LOST

    # advantages only for the real attempts of groups with 2 or more of them, each group's own GRPO
    advantages = dict(step.store.db.execute("SELECT slot, advantage FROM advantages WHERE step = 1").fetchall())
    kept = [[0, 1, 3], [8, 9, 10, 11]]
    assert set(advantages) == {s for slots in kept for s in slots}
    for slots in kept:
        rewards = [episodes[s].reward for s in slots]
        mean, std = statistics.mean(rewards), statistics.stdev(rewards)
        assert [advantages[s] for s in slots] == pytest.approx([(r - mean) / (std + 1e-6) for r in rewards], abs=1e-6)

    # the update equals one on a batch in which the lost attempts were never sampled
    trained = [p.detach().clone() for p in model.parameters()]
    fresh, fresh_model = _step(cfg, monkeypatch, REPLIES, LosingSandbox())
    fresh.update([_group([episodes[s] for s in slots]) for slots in kept])
    assert all(torch.equal(a, b) for a, b in zip(trained, fresh_model.parameters()))
    start = load("tiny-random").model.parameters()
    assert not all(torch.equal(a, b) for a, b in zip(trained, start))  # and it did train


def _group(records) -> Group:
    """A group of these attempts alone, as a run that never had the others would have it."""
    return Group(None, None, records[0].prompt_ids, [r.sequence for r in records], [r.mask for r in records],
                 [r.reward for r in records], [r.passed for r in records], [1] * len(records),
                 [r.truncated for r in records])


def test_a_sandbox_failure_that_clears_on_retry_is_scored_normally(monkeypatch):
    cfg = _cfg(**{"rollout.prompts_per_step": 1})
    replies = ["FLAKY ee 1", "e 2", "ee 3", "FLAKY e 4"]
    box = LosingSandbox()
    step, _ = _step(cfg, monkeypatch, replies, box)
    got = step.collect(1)
    metrics = step.collector.metrics(got)
    assert [box.calls[r] for r in replies] == [2, 1, 1, 2]
    assert (metrics["infra/failed"], metrics["infra/retried"], metrics["infra/share"]) == (0, 2, 0.0)
    group = got.batch[0]
    assert group.rewards == [1.0, 0.0, 1.0, 0.0] and group.infra_failed == 0 and len(group.sequences) == 4
    assert group.statuses == ["passed", "wrong", "passed", "wrong"]


def test_a_step_whose_every_attempt_is_lost_trains_on_nothing(monkeypatch):
    cfg = _cfg(**{"rollout.prompts_per_step": 1, "rollout.infra_retries": 0})
    box = LosingSandbox()
    step, _ = _step(cfg, monkeypatch, ["BROKEN 1", "BROKEN 2", "BROKEN 3", "BROKEN 4"], box)
    metrics = step.step(1)
    assert metrics["skipped_update"] == 1 and metrics["groups_trained"] == 0
    assert (metrics["infra/failed"], metrics["infra/retried"], metrics["infra/share"]) == (4, 0, 1.0)
    assert sum(box.calls.values()) == 4  # infra_retries 0: one try each
