"""GRPO with vLLM sampling on tiny-random: every update's sync is checked, the sampler gap is
logged and corrected, a skipped sync stops the run, and what the vLLM path guarantees about
determinism (same seed, same run; a resumed run equals an uninterrupted one) holds."""

from __future__ import annotations

import importlib.util
import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from tempering.config import load_config
from tempering.trainer import prepare_run, train

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                 reason="vLLM is not installed (make setup installs it)"),
              pytest.mark.xdist_group("vllm")]


def _cfg(**over):
    base = {"rollout.engine": "vllm", "rollout.engine_kv_gib": 0.25, "log.report": "false",
            "algorithm.drop_zero_variance": "true", "rollout.min_informative_groups": 1}
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in (base | over).items()])


def _weights(path):
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


def test_every_update_is_synced_checked_and_its_sampler_gap_logged(tmp_path, parity_env):
    cfg = _cfg()
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=3, progress=False, env=parity_env)
    assert [m["step"] for m in metrics] == [1, 2, 3]
    trained = [m for m in metrics if not m.get("skipped_update")]
    assert trained and any(m["grad_norm"] > 0 for m in trained)  # the weights moved, so each sync had work
    for m in trained:
        assert m["rollout/sync_ok"] == 1.0 and m["rollout/sync_tensors_checked"] > 0
        assert m["rollout/sync_tensors_unequal"] == 0 and m["rollout/probe_diff_max"] < 2e-3
        assert m["rollout/logprob_diff_mean"] < 1e-3  # fp32 engine: sampler and trainer agree
        assert m["rollout/tis_weight_mean"] == pytest.approx(1.0, abs=1e-3) and m["rollout/tis_clipped_frac"] == 0.0


def test_a_skipped_sync_is_caught_on_that_step_and_stops_the_run(tmp_path, parity_env, monkeypatch):
    from tempering.rollout.vllm_client import VLLMClient
    from tempering.scheduler.store import Store

    real, calls = VLLMClient.sync_weights, []

    def flaky(self, model):  # the first sync (at start) is real; every later one copies nothing
        calls.append(1)
        return real(self, model) if len(calls) == 1 else 0.0

    monkeypatch.setattr(VLLMClient, "sync_weights", flaky)
    cfg = _cfg()
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=4, progress=False, env=parity_env)
    first_update = next(i for i, m in enumerate(metrics) if not m.get("skipped_update"))
    assert len(metrics) == first_update + 1  # stopped right after the first update's sync failed
    assert metrics[-1]["rollout/sync_ok"] == 0.0 and metrics[-1]["rollout/sync_tensors_unequal"] > 0
    store = Store(tmp_path / "store.sqlite")
    try:
        alerts = store.alerts()
    finally:
        store.close()
    assert [a["kind"] for a in alerts] == ["sync"]
    assert "not sampling from the trained weights" in alerts[0]["message"]


def test_same_seed_same_run_and_a_resumed_run_equals_an_uninterrupted_one(tmp_path, parity_env):
    """fp32 vLLM on one machine: each sample's seed fixes its tokens and a resumed engine gets
    the checkpoint's exact weights, so the runs agree step for step."""
    cfg = _cfg()
    straight, again, split = tmp_path / "straight", tmp_path / "again", tmp_path / "split"
    for d in (straight, again, split):
        prepare_run(cfg, d)
    a = train(cfg, straight, steps=3, progress=False, env=parity_env)
    b = train(cfg, again, steps=3, progress=False, env=parity_env)
    c = train(cfg, split, steps=2, progress=False, env=parity_env)
    c += train(cfg, split, steps=3, resume=True, progress=False, env=parity_env)
    rewards = lambda ms: [m["reward_mean"] for m in ms]  # noqa: E731
    assert rewards(a) == rewards(b) == rewards(c)
    wa, wb, wc = (_weights(d / "checkpoints" / "step-3") for d in (straight, again, split))
    assert all(torch.equal(wa[k], wb[k]) and torch.equal(wa[k], wc[k]) for k in wa)
    lines = [json.loads(x) for x in (split / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines] == [1, 2, 3]
