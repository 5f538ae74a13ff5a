"""Policy losses: pure functions on per-token tensors.

All tensors are (B, T) over completion tokens; `mask` is 1 on tokens the model generated
and 0 on padding. "Token-level" normalisation (DAPO, arXiv:2503.14476) averages over every
generated token in the batch, so long completions are not down-weighted per token as they
are when each sequence is averaged first.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tempering.algorithms.kl import KL_ESTIMATORS


def masked_mean(x: torch.Tensor, mask: torch.Tensor, denom: float | None = None) -> torch.Tensor:
    """Mean of x over positions where mask is 1 (token-level normalisation).

    `denom` replaces the mask's own token count: pass the token count of the whole batch
    when the batch is split into micro-batches, so their gradients add up to the full one.
    """
    return (x * mask).sum() / (mask.sum().clamp(min=1) if denom is None else denom)


@dataclass(frozen=True)
class PolicyLossOutput:
    loss: torch.Tensor
    """Scalar to backpropagate."""
    pg_loss: torch.Tensor
    kl: torch.Tensor
    """Mean per-token KL estimate (0 when no reference is given)."""
    clip_frac: torch.Tensor
    """Fraction of tokens whose ratio was clipped."""


def ppo_clip_loss(
    logp: torch.Tensor,          # (B, T) current policy log-probs of the sampled tokens
    old_logp: torch.Tensor,      # (B, T) log-probs when the tokens were sampled
    advantages: torch.Tensor,    # (B,) or (B, T)
    mask: torch.Tensor,          # (B, T) 1 on generated tokens
    clip_eps: float = 0.2,
    ref_logp: torch.Tensor | None = None,
    beta: float = 0.0,
    kl_estimator: str = "k3",
    denom: float | None = None,  # total generated tokens in the full batch, see masked_mean
) -> PolicyLossOutput:
    """PPO's clipped surrogate (Schulman et al. 2017, arXiv:1707.06347), as GRPO uses it,
    with an optional KL penalty to the reference model added to the loss (not the reward).

        L = mean_tokens[ -min(r A, clip(r, 1-eps, 1+eps) A) + beta * KL(pi || pi_ref) ]
    """
    if advantages.dim() == 1:
        advantages = advantages[:, None]  # (B, 1): one advantage per sequence
    ratio = torch.exp(logp - old_logp)  # (B, T)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    pg = -torch.minimum(unclipped, clipped)  # (B, T)
    pg_loss = masked_mean(pg, mask, denom)
    clip_frac = masked_mean((unclipped != clipped).float(), mask, denom)
    if ref_logp is not None and beta > 0:
        kl = masked_mean(KL_ESTIMATORS[kl_estimator](logp, ref_logp), mask, denom)
    else:
        kl = torch.zeros((), dtype=logp.dtype)
    return PolicyLossOutput(loss=pg_loss + beta * kl, pg_loss=pg_loss, kl=kl, clip_frac=clip_frac)


POLICY_LOSSES = {"grpo": ppo_clip_loss}
