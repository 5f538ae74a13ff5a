"""One step off-policy: step k+1 is sampled by the weights before update k while step k
trains, and the update's ratios are taken against the sampling log-probs."""

from __future__ import annotations

import pytest
import torch

from tempering.config import load_config
from tempering.errors import ConfigError
from tempering.scheduler.store import STORE_FILE, Store
from tempering.trainer import prepare_run, train

SETS = ["algorithm.beta=0", "optim.lr=1e-3"]


def _run(tmp_path, name, extra, env):
    cfg = load_config("configs/tiny-cpu.yaml", SETS + extra)
    prepare_run(cfg, tmp_path / name)
    # the parity env pays about half the attempts, so every update moves the weights
    metrics = train(cfg, tmp_path / name, steps=2, progress=False, env=env)
    store = Store(tmp_path / name / STORE_FILE)
    episodes = store.episodes()
    store.close()
    return metrics, episodes


def test_batches_come_from_the_weights_one_update_back(tmp_path, parity_env):
    off, off_eps = _run(tmp_path, "off", ["rollout.max_staleness=1"], parity_env)
    frozen, frozen_eps = _run(tmp_path, "frozen", ["optim.lr=0"], parity_env)  # every batch from the start weights
    on, on_eps = _run(tmp_path, "on", [], parity_env)
    assert [m["staleness"] for m in off] == [0, 1] and [m["staleness"] for m in on] == [0, 0]
    def same(a, b, step, tol=1e-4) -> bool:
        """Same tokens, and log-probs equal up to float noise (sampling ran in another thread)."""
        a, b = [e for e in a if e.step == step], [e for e in b if e.step == step]
        return [e.sequence for e in a] == [e.sequence for e in b] and all(
            torch.allclose(torch.tensor(x.logprobs), torch.tensor(y.logprobs), atol=tol) for x, y in zip(a, b))

    # steps 1 and 2 of the off-policy run were both sampled by the starting weights
    assert same(off_eps, frozen_eps, 1) and same(on_eps, frozen_eps, 1)
    assert same(off_eps, frozen_eps, 2)
    assert not same(on_eps, frozen_eps, 2)  # on-policy step 2 saw the first update
    assert {e.step for e in off_eps} == {1, 2}  # nothing sampled past the last step
    assert all(len(e.logprobs) == len(e.sequence) for e in off_eps)


def test_update_ratios_use_the_sampling_logprobs(tmp_path, parity_env):
    """Same group, same weights: with behaviour log-probs equal to the policy's the update
    is the on-policy one; with other behaviour log-probs it is not."""
    from tempering.models import load
    from tempering.trainer.rl import RLStep
    from tempering.trainer.run import _optimizer

    grads = []
    for shift in (0.0, 0.0, 0.7):
        staleness = 0 if not grads else 1
        cfg = load_config("configs/tiny-cpu.yaml", SETS + [f"rollout.max_staleness={staleness}"])
        loaded = load("tiny-random")
        opt, sched = _optimizer(cfg, loaded.model)
        step = RLStep(cfg, parity_env, loaded.model, loaded.tokenizer, opt, sched)
        batch, _, _ = step.collect(1)
        for g in batch:
            lp = step._logprobs(loaded.model, g, cfg.rollout.temperature, loaded.tokenizer.pad_token_id or 0).logp
            g.logprobs = [tuple((lp[i, :len(s)] - shift).tolist()) for i, s in enumerate(g.sequences)]
        step.optimizer.step = lambda: None  # keep the weights: compare gradients only
        step.update(batch)
        grads.append(torch.cat([p.grad.flatten() for p in loaded.model.parameters() if p.grad is not None]))
    assert torch.allclose(grads[0], grads[1], atol=1e-6)
    assert not torch.allclose(grads[0], grads[2], atol=1e-4)


def test_off_policy_rejects_a_retraining_reward_model(tmp_path):
    cfg = load_config("configs/tiny-cpu.yaml", ["rollout.max_staleness=1", "reward.model=x", "reward.model_weight=1",
                                                "reward.model_update_every=2"])
    with pytest.raises(ConfigError, match="max_staleness"):
        prepare_run(cfg, tmp_path / "r")
