"""The gap between the engine that sampled and the trainer that learns from the samples.

vLLM (in bf16, or with its own kernels in fp32) gives the sampled tokens other probabilities
than the trainer's forward pass does. The policy gradient assumes the trainer's policy drew
them; truncated importance sampling (`algorithms.losses.tis_weights`) reweighs each token by
pi_trainer / pi_sampler, capped. What it saw is logged every update:

    rollout/logprob_diff_mean   mean |log pi_trainer - log pi_sampler| over generated tokens
    rollout/logprob_diff_max    the largest
    rollout/tis_clipped_frac    share of tokens whose weight hit the cap
    rollout/tis_weight_mean     mean weight (1 when the engines agree)
"""

from __future__ import annotations

import torch

from tempering.algorithms.losses import tis_weights


class SamplerMismatch:
    """Weights for each unit's tokens, and the mismatch statistics over the update."""

    def __init__(self, cap: float) -> None:
        self.cap = cap
        self.tokens = 0.0
        self.diff_sum = self.diff_max = self.clipped = self.weight_sum = 0.0

    def weights(self, trainer_logp: torch.Tensor, sampler_logp: torch.Tensor, mask: torch.Tensor,
                record: bool = True) -> torch.Tensor | None:
        """(G, C) weights for the loss (None when the correction is off, cap 0); the unit's
        statistics are added when `record`."""
        gap = (trainer_logp.detach() - sampler_logp) * mask
        w = tis_weights(trainer_logp, sampler_logp, self.cap) if self.cap > 0 else None
        if record:
            on = mask > 0
            self.tokens += float(mask.sum())
            self.diff_sum += float(gap.abs().sum())
            self.diff_max = max(self.diff_max, float(gap.abs().max()) if on.any() else 0.0)
            if w is not None:
                self.clipped += float(((gap.exp() >= self.cap) & on).sum())
                self.weight_sum += float((w * mask).sum())
        return w

    def metrics(self) -> dict:
        n = max(self.tokens, 1.0)
        out = {"rollout/logprob_diff_mean": self.diff_sum / n, "rollout/logprob_diff_max": self.diff_max}
        if self.cap > 0:
            out |= {"rollout/tis_clipped_frac": self.clipped / n, "rollout/tis_weight_mean": self.weight_sum / n}
        return out
