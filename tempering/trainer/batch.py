"""The RL update's inputs as typed records: the batch prepared for the loss (units, masks,
normaliser, log-probs fixed before the first epoch) and its advantages.

A unit is what one forward pass trains on: a group, or a later stretch of a long episode (a
one-row group on its compressed prompt, rollout.context_budget) that carries its attempt's
advantage. `batch_advantages` picks the estimator from the algorithm's recipe
(config.RECIPES): an outcome estimator over each group's rewards, or GAE over the critic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch

from tempering.algorithms import KL_ESTIMATORS
from tempering.algorithms.advantages import group_advantages, outcome_rewards, whitened_gae
from tempering.algorithms.losses import Norm, overlong_penalty
from tempering.config import RECIPES, Config
from tempering.trainer.group import Group


@dataclass(frozen=True)
class PreparedBatch:
    """What every epoch of one update trains on."""

    groups: list[Group]
    """The batch as sampled: N groups."""
    units: list[Group]
    """The N groups, then every later stretch of their episodes."""
    owners: list[tuple[int, int]]
    """(group, attempt) that each stretch unit (units[N:]) belongs to."""
    masks: list[torch.Tensor]
    """(G, C) per unit: 1 on the tokens that carry loss."""
    norm: Norm
    """Batch-wide counts each unit's loss is divided by, so the split into units does not matter."""
    beta: float
    """The KL coefficient this step."""
    ref: list[torch.Tensor] | None
    """(G, C) per unit: the reference model's log-probs; None without a reference or with beta 0."""
    old: list[torch.Tensor] | None
    """(G, C) per unit: the policy's log-probs before the update, where later epochs or a KL reward need them."""
    behaviour: list[torch.Tensor] | None
    """(G, C) per unit: the log-probs the samples were drawn with (one step off-policy), else None."""
    sampler: list[torch.Tensor] | None = None
    """(G, C) per unit: the sampling engine's own log-probs, where another engine than the
    trainer sampled (rollout.engine vllm) and truncated importance sampling corrects for it."""

    @property
    def base(self) -> list[torch.Tensor] | None:
        """Ratio denominators: the behaviour policy's log-probs, else the policy's before the
        update; None means each pass's own detached log-probs (ratio exactly 1)."""
        return self.behaviour if self.behaviour is not None else self.old


@dataclass(frozen=True)
class BatchAdvantages:
    """The advantages of a prepared batch, and what the critic learns from (ppo)."""

    per_unit: list[torch.Tensor]
    """Per unit: (G,) one per attempt, or (G, C) one per token (GAE)."""
    returns: list[torch.Tensor] | None = None
    """GAE: (G, C) per group, the critic's targets; else None."""
    values: list[torch.Tensor] | None = None
    """GAE: (G, C) per group, the critic's values at sampling time (for the value clip); else None."""
    kl_reward: float | None = None
    """Mean per-token KL penalised in the reward (algorithm.kl_in reward), else None."""
    value_mean: float | None = None
    """GAE: the critic's mean value over generated tokens, else None."""

    def metrics(self) -> dict:
        return {k: v for k, v in (("kl_reward", self.kl_reward), ("value_mean", self.value_mean)) if v is not None}


def loss_mask(g: Group, overlong_filter: bool) -> torch.Tensor:
    """(G, C) loss mask: generated tokens, minus truncated attempts under overlong filtering."""
    width = max(1, max(len(s) for s in g.sequences))
    mask = torch.zeros(len(g.sequences), width)
    for i, m in enumerate(g.masks):
        if not (overlong_filter and g.truncated[i]):
            mask[i, : len(m)] = torch.tensor(m, dtype=mask.dtype)
    return mask


def behaviour_logprobs(g: Group) -> torch.Tensor:
    """(G, C) sampling log-probs of the group's tokens (0 off the mask)."""
    width = max(1, max(len(s) for s in g.sequences))
    out = torch.zeros(len(g.sequences), width)
    for i, lp in enumerate(g.logprobs):
        out[i, : len(lp)] = torch.tensor(lp, dtype=out.dtype)
    return out


def prepare_batch(cfg: Config, batch: list[Group], mask: Callable[[Group], torch.Tensor],
                  logprobs: Callable[..., torch.Tensor], policy, reference, beta: float,
                  device: torch.device, sampled_elsewhere: bool = False) -> PreparedBatch:
    """Units, masks and normaliser, and the log-probs the loss compares against.

    Log-probs before the update are needed for later epochs' ratios and a KL reward; with
    one epoch otherwise, the first pass's own detached log-probs serve (ratio exactly 1).
    Off-policy, ratios are taken against the log-probs the samples were drawn with (the
    behaviour policy): PPO's clipped importance ratio is the correction.
    `logprobs(model, unit)` gives a unit's (G, C) log-probs under a model. `sampled_elsewhere`:
    an engine other than the policy's own weights sampled (vllm), so its log-probs are kept
    for the sampler correction.
    """
    a, r = cfg.algorithm, cfg.rollout
    owners = [(i, j) for i, g in enumerate(batch) for j, _ in g.stretches()]
    units = [*batch, *(u for g in batch for _, u in g.stretches())]
    masks = [mask(g).to(device) for g in units]
    norm = Norm(tokens=float(sum(m.sum() for m in masks)), sequences=float(sum(len(g.sequences) for g in units)),
                max_len=float(r.max_new_tokens * r.max_turns))
    use_ref = reference is not None and beta > 0
    behaviour = [behaviour_logprobs(g).to(device) for g in units] if r.max_staleness else None
    sampler = [behaviour_logprobs(g).to(device) for g in units] if sampled_elsewhere else None
    need_old = (a.epochs > 1 and behaviour is None) or (use_ref and a.kl_in == "reward")
    with torch.no_grad():
        old = [logprobs(policy, g) for g in units] if need_old else None
        ref = [logprobs(reference, g) for g in units] if use_ref else None
    return PreparedBatch(batch, units, owners, masks, norm, beta, ref, old, behaviour, sampler)


def batch_advantages(cfg: Config, prep: PreparedBatch, critic=None) -> BatchAdvantages:
    """Advantages per unit by the recipe's estimator: (G,) per attempt over each group's
    rewards, or (G, C) per token by GAE over the critic's values. DAPO's soft length penalty
    and a KL penalty in the reward (algorithm.kl_in reward) apply to the rewards first."""
    a, r = cfg.algorithm, cfg.rollout
    n = len(prep.groups)
    masks = prep.masks[:n]
    # (G_i,) per group: groups differ in size where infrastructure failures left attempts out
    rewards = [torch.tensor(g.rewards, dtype=torch.float32) for g in prep.groups]
    if a.overlong_buffer > 0:
        limit = r.max_new_tokens * r.max_turns
        rewards = [x + a.overlong_penalty * overlong_penalty(torch.tensor(g.lengths), limit, a.overlong_buffer)
                   for x, g in zip(rewards, prep.groups)]
    rewards = [x.to(masks[0].device) for x in rewards]
    kl_tok, kl_reward = None, None
    if prep.ref is not None and a.kl_in == "reward":  # per-token KL penalties join the reward
        kl_tok = [KL_ESTIMATORS[a.kl_estimator](o, f) * m for o, f, m in zip(prep.old[:n], prep.ref[:n], masks)]
        kl_reward = float(sum(k.sum() for k in kl_tok) / max(1.0, sum(float(m.sum()) for m in masks)))
    estimator = RECIPES[a.name].estimator
    if RECIPES[a.name].needs_critic:
        out = _critic_advantages(cfg, prep.groups, masks, rewards, kl_tok, prep.beta, critic)
    else:
        if kl_tok is not None:
            rewards = [x - prep.beta * k.sum(dim=1) for x, k in zip(rewards, kl_tok)]
        out = BatchAdvantages(group_advantages(estimator, rewards))  # (G_i,) each
    per_unit = out.per_unit + [out.per_unit[i][j:j + 1] for i, j in prep.owners]
    return BatchAdvantages(per_unit, out.returns, out.values, kl_reward, out.value_mean)


def _critic_advantages(cfg: Config, groups: list[Group], masks: list[torch.Tensor], rewards: list[torch.Tensor],
                       kl_tok: list[torch.Tensor] | None, beta: float, critic) -> BatchAdvantages:
    """PPO: token rewards (the outcome on each attempt's last generated token, minus any KL
    penalty), GAE over the critic's values, whitened over the batch."""
    values = [critic.values(g) for g in groups]  # (G, C) each
    tokens = [outcome_rewards(rewards[i], masks[i], None if kl_tok is None else -beta * kl_tok[i])
              for i in range(len(groups))]
    advantages, returns = whitened_gae(tokens, values, masks, gamma=cfg.critic.gamma, lam=cfg.critic.lam)
    generated = sum(int((m > 0).sum()) for m in masks)
    value_mean = float(sum((v * m).sum() for v, m in zip(values, masks)) / max(1.0, float(generated)))
    return BatchAdvantages(advantages, returns, values, value_mean=value_mean)
