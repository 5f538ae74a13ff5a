"""Per-token KL estimators between the policy and a frozen reference (Schulman, 2020,
"Approximating KL divergence", http://joschu.net/blog/kl-approx.html).

With log-ratio x = log pi_ref(t) - log pi(t) for tokens t sampled from pi:
    k1 = -x                  unbiased, high variance, can be negative
    k2 = x^2 / 2             biased, low variance
    k3 = (e^x - 1) - x       unbiased, low variance, always >= 0 (GRPO's choice)
All are exactly zero when the two models agree.
"""

from __future__ import annotations

import torch


def kl_k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    return logp - ref_logp


def kl_k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    return 0.5 * (ref_logp - logp) ** 2


def kl_k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    x = ref_logp - logp
    return torch.expm1(x) - x


KL_ESTIMATORS = {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}


class AdaptiveKL:
    """A KL coefficient that tracks a target KL (Ziegler et al. 2019, arXiv:1909.08593):

        beta <- beta * (1 + clip((KL - target) / target, -0.2, 0.2) * steps / horizon)

    so beta grows while the policy drifts past the target and shrinks below it. With
    target None the coefficient stays fixed.
    """

    def __init__(self, beta: float, target: float | None = None, horizon: int = 10000):
        self.beta, self.target, self.horizon = beta, target, horizon

    def update(self, kl: float, steps: int = 1) -> float:
        if self.target is not None and self.target > 0:
            error = max(-0.2, min(0.2, (kl - self.target) / self.target))
            self.beta *= 1.0 + error * steps / self.horizon
        return self.beta

    def state_dict(self) -> dict:
        return {"beta": self.beta}

    def load_state_dict(self, state: dict) -> None:
        self.beta = state["beta"]
