"""RLStep.update: the textbook GRPO gradient, and zero-advantage groups skipped with the same weights after."""

from __future__ import annotations

import torch

from tempering.config import load_config
from tempering.models import load
from tempering.trainer.rl import RLStep
from tempering.trainer.run import _optimizer


def _update(cfg, env, batch, skip: bool):
    loaded = load("tiny-random")
    opt, sched = _optimizer(cfg, loaded.model)
    step = RLStep(cfg, env, loaded.model, loaded.tokenizer, opt, sched)
    if not skip:
        step._idle = lambda advantages, use_ref: [False] * len(advantages)
    runs = []
    inner = step._logprobs
    step._logprobs = lambda *a, **k: runs.append(1) or inner(*a, **k)
    metrics = step.update(batch)
    return [p.detach().clone() for p in loaded.model.parameters()], len(runs), metrics


def test_zero_advantage_groups_are_skipped_with_the_same_weights_after(parity_env):
    cfg = load_config("configs/tiny-cpu.yaml", ["algorithm.beta=0", "optim.lr=1e-3", "rollout.prompts_per_step=3"])
    loaded = load("tiny-random")
    opt, sched = _optimizer(cfg, loaded.model)
    batch, _, _ = RLStep(cfg, parity_env, loaded.model, loaded.tokenizer, opt, sched).collect(1)
    assert len(batch) == 3
    batch[0].rewards, batch[1].rewards, batch[2].rewards = [1.0] * 4, [0.0] * 4, [1.0, 0.0, 0.0, 1.0]

    fast, fast_runs, fast_m = _update(cfg, parity_env, batch, skip=True)
    full, full_runs, full_m = _update(cfg, parity_env, batch, skip=False)
    assert (fast_runs, full_runs) == (1, 3) and fast_m["groups_idle"] == 2 and full_m["groups_idle"] == 0
    assert all(torch.equal(a, b) for a, b in zip(fast, full))
    assert fast_m["loss"] == full_m["loss"]
    start = [p.detach() for p in load("tiny-random").model.parameters()]
    assert not all(torch.equal(a, b) for a, b in zip(fast, start))  # the informative group moved them


def test_an_all_idle_batch_still_steps_on_zero_gradients(parity_env):
    """AdamW moves weights on a zero gradient (weight decay, earlier momentum): skipping every
    group must not turn that step into no step."""
    cfg = load_config("configs/tiny-cpu.yaml", ["algorithm.beta=0", "optim.lr=1e-3", "optim.weight_decay=0.1"])
    loaded = load("tiny-random")
    opt, sched = _optimizer(cfg, loaded.model)
    batch, _, _ = RLStep(cfg, parity_env, loaded.model, loaded.tokenizer, opt, sched).collect(1)
    for g in batch:
        g.rewards = [0.0] * len(g.rewards)
    fast, fast_runs, _ = _update(cfg, parity_env, batch, skip=True)
    full, _, _ = _update(cfg, parity_env, batch, skip=False)
    assert fast_runs == 0
    assert all(torch.equal(a, b) for a, b in zip(fast, full))


def test_update_gradient_is_the_textbook_grpo_gradient(parity_env):
    """RLStep.update against GRPO written out by hand on the same batch: one plain forward
    pass per attempt over prompt + reply, logits / T, advantages (r - mean) / (std + eps)
    per group, -A log p summed over every sampled token and divided by their count."""
    cfg = load_config("configs/tiny-cpu.yaml", ["algorithm.beta=0", "rollout.prompts_per_step=3", "rollout.temperature=0.7",
                                                "algorithm.loss_agg=token_mean", "optim.grad_clip=1e9"])
    loaded = load("tiny-random")
    model = loaded.model
    opt, sched = _optimizer(cfg, model)
    step = RLStep(cfg, parity_env, model, loaded.tokenizer, opt, sched)
    batch, _, _ = step.collect(1)
    for g, r in zip(batch, ([1.0, 0.0, 0.0, 1.0], [0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0])):
        g.rewards = r
    step.optimizer.step = lambda: None  # keep the weights: compare gradients only
    step.update(batch)
    got = torch.cat([p.grad.flatten() for p in model.parameters()])

    model.zero_grad()
    model.train()
    tokens = sum(len(s) for g in batch for s in g.sequences)
    for g in batch:
        r = torch.tensor(g.rewards)
        adv = (r - r.mean()) / (r.std() + 1e-6)
        for seq, a in zip(g.sequences, adv):
            ids = torch.tensor([list(g.prompt_ids) + list(seq)])
            logits = model(input_ids=ids).logits[0, len(g.prompt_ids) - 1:-1].float() / 0.7
            logp = torch.log_softmax(logits, dim=-1).gather(1, torch.tensor(seq)[:, None])[:, 0]
            (-(a * logp).sum() / tokens).backward()
    want = torch.cat([p.grad.flatten() for p in model.parameters()])
    assert want.norm() > 0
    assert torch.allclose(got, want, rtol=1e-3, atol=1e-7), (got - want).abs().max()
