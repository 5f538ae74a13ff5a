"""Policy and value losses: pure functions on per-token tensors.

All tensors are (B, T) over the tokens after the prompt; `mask` is 1 on tokens the model
generated and 0 on padding (and on env feedback inside a multi-turn episode).

How per-token terms become one number (`Norm`, `aggregate`) is where the GRPO variants
differ most, and it must not depend on how a batch is split into micro-batches, so the
batch-wide counts travel with each call:

    token_mean               sum over every generated token / tokens in the batch (DAPO)
    seq_mean_token_mean      mean over each sequence's tokens, then over sequences (GRPO)
    seq_mean_token_sum_norm  sum over each sequence / a constant length, mean over
                             sequences (Dr. GRPO: no bias toward short or long answers)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tempering.algorithms.kl import KL_ESTIMATORS

AGGREGATIONS = ("token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm")


@dataclass(frozen=True)
class Norm:
    """Batch-wide counts that turn per-token sums into the loss of the whole batch."""

    tokens: float
    """Generated tokens in the whole batch."""
    sequences: float
    """Sequences in the whole batch."""
    max_len: float = 1.0
    """Dr. GRPO's constant normaliser (the generation budget in tokens)."""

    @classmethod
    def of(cls, mask: torch.Tensor, max_len: float = 1.0) -> "Norm":
        return cls(tokens=float(mask.sum()), sequences=float(mask.shape[0]), max_len=max_len)


def masked_mean(x: torch.Tensor, mask: torch.Tensor, denom: float | None = None) -> torch.Tensor:
    """Mean of x over positions where mask is 1 (token-level normalisation).

    `denom` replaces the mask's own token count: pass the token count of the whole batch
    when the batch is split into micro-batches, so their gradients add up to the full one.
    """
    return (x * mask).sum() / (mask.sum().clamp(min=1) if denom is None else denom)


def aggregate(x: torch.Tensor, mask: torch.Tensor, mode: str = "token_mean", norm: Norm | None = None) -> torch.Tensor:
    """Reduce per-token x (B, T) to this micro-batch's share of the batch loss (see module doc)."""
    norm = norm or Norm.of(mask)
    if mode == "token_mean":
        return (x * mask).sum() / max(norm.tokens, 1.0)
    if mode == "seq_mean_token_mean":
        per_seq = (x * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1)  # (B,)
        return per_seq.sum() / norm.sequences
    if mode == "seq_mean_token_sum_norm":
        return (x * mask).sum() / (norm.max_len * norm.sequences)
    raise ValueError(f"unknown loss aggregation {mode!r}: use one of {', '.join(AGGREGATIONS)}")


@dataclass(frozen=True)
class PolicyLossOutput:
    loss: torch.Tensor
    """Scalar to backpropagate."""
    pg_loss: torch.Tensor
    kl: torch.Tensor
    """Mean per-token KL estimate (0 when no reference is given)."""
    clip_frac: torch.Tensor
    """Fraction of tokens whose ratio was clipped."""
    entropy: torch.Tensor
    """Mean per-token entropy (0 when none is given)."""


def policy_loss(
    logp: torch.Tensor,          # (B, T) current policy log-probs of the sampled tokens
    old_logp: torch.Tensor,      # (B, T) log-probs when the tokens were sampled
    advantages: torch.Tensor,    # (B,) one per sequence, or (B, T) one per token
    mask: torch.Tensor,          # (B, T) 1 on generated tokens
    clip_low: float = 0.2,
    clip_high: float | None = None,
    agg: str = "token_mean",
    norm: Norm | None = None,
    ref_logp: torch.Tensor | None = None,
    beta: float = 0.0,
    kl_estimator: str = "k3",
    entropy: torch.Tensor | None = None,  # (B, T) per-token entropy, with grad for a bonus
    entropy_coef: float = 0.0,
    is_weights: torch.Tensor | None = None,  # (B, T) sampler-correction weights, no grad (tis_weights)
) -> PolicyLossOutput:
    """PPO's clipped surrogate (Schulman et al. 2017, arXiv:1707.06347) as the GRPO family
    uses it, with DAPO's decoupled clip range (clip-higher: `clip_high` > `clip_low` lets
    unlikely tokens gain probability, which keeps entropy from collapsing), an optional KL
    penalty to the reference in the loss, and an optional entropy bonus.

        r = pi / pi_old;   L = agg[ -w min(r A, clip(r, 1 - low, 1 + high) A) + beta KL ] - c H

    `is_weights` (w, default 1) corrects for samples drawn by another engine than the one
    that trains (see `tis_weights`).
    """
    clip_high = clip_low if clip_high is None else clip_high
    if advantages.dim() == 1:
        advantages = advantages[:, None]  # (B, 1): one advantage per sequence
    ratio = torch.exp(logp - old_logp)  # (B, T)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages
    surrogate = -torch.minimum(unclipped, clipped)
    if is_weights is not None:
        surrogate = surrogate * is_weights
    pg_loss = aggregate(surrogate, mask, agg, norm)
    clip_frac = aggregate((unclipped != clipped).float(), mask, "token_mean", norm)
    zero = torch.zeros((), dtype=logp.dtype)
    kl = aggregate(KL_ESTIMATORS[kl_estimator](logp, ref_logp), mask, agg, norm) \
        if ref_logp is not None and beta > 0 else zero
    ent = aggregate(entropy, mask, agg, norm) if entropy is not None else zero
    loss = pg_loss + beta * kl - entropy_coef * ent
    return PolicyLossOutput(loss=loss, pg_loss=pg_loss, kl=kl, clip_frac=clip_frac, entropy=ent)


def tis_weights(trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, cap: float) -> torch.Tensor:
    """Truncated importance sampling (Yao et al. 2025, "Your efficient RL framework secretly
    brings you off-policy RL training"): the sampler (vLLM, perhaps in bf16) and the trainer
    give the same tokens different probabilities, so the policy gradient, which assumes the
    trainer's policy drew them, is reweighted token by token by pi_trainer / pi_sampler,
    capped at `cap` to bound the variance. Both (B, T) log-probs; returns (B, T), no grad.

        w = min(exp(logp_trainer - logp_sampler), cap)
    """
    return torch.exp(trainer_logp.detach() - sampler_logp).clamp(max=cap)


def value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor, mask: torch.Tensor,
               clip: float | None = 0.2, norm: Norm | None = None) -> torch.Tensor:
    """PPO's critic loss: 0.5 (V - R)^2, pessimistically clipped to stay within `clip` of
    the values the rollout was scored with (as in the PPO reference implementation)."""
    err = (values - returns) ** 2
    if clip is not None:
        clipped = old_values + torch.clamp(values - old_values, -clip, clip)
        err = torch.maximum(err, (clipped - returns) ** 2)
    return 0.5 * aggregate(err, mask, "token_mean", norm)


def overlong_penalty(lengths: torch.Tensor, max_len: int, buffer: int) -> torch.Tensor:
    """DAPO's soft length penalty: 0 up to max_len - buffer tokens, then falling linearly
    to -1 at max_len (and -1 beyond). lengths: (B,) generated tokens per sequence.

    >>> overlong_penalty(torch.tensor([10, 14, 16, 20]), max_len=16, buffer=4)
    tensor([-0.0000, -0.5000, -1.0000, -1.0000])
    """
    if buffer <= 0:
        return torch.where(lengths > max_len, -1.0, 0.0)
    over = (lengths.float() - (max_len - buffer)) / buffer
    return -over.clamp(min=0.0, max=1.0)

