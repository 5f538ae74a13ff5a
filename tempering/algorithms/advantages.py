"""Advantage estimators: pure functions from rewards to per-sequence advantages.

GRPO (Shao et al. 2024, "DeepSeekMath", arXiv:2402.03300) replaces the learned critic with
the statistics of a group of completions of the same prompt: A_i = (r_i - mean) / (std + eps).
Dr. GRPO (Liu et al. 2025, arXiv:2503.20783) keeps the centring and drops the std division,
which otherwise up-weights prompts that are nearly always right or nearly always wrong.
"""

from __future__ import annotations

import torch


def grpo_advantages(rewards: torch.Tensor, scale: bool = True, eps: float = 1e-6) -> torch.Tensor:
    """Group-normalised advantages.

    rewards: (num_groups, group_size). Returns the same shape. The std is the unbiased
    sample std, as in the DeepSeekMath reference implementation.

    >>> grpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]))
    tensor([[ 0.8660, -0.8660, -0.8660,  0.8660]])
    """
    centred = rewards - rewards.mean(dim=1, keepdim=True)  # (G, n)
    if not scale:
        return centred
    return centred / (rewards.std(dim=1, keepdim=True) + eps)


def group_has_signal(rewards: torch.Tensor, tol: float = 1e-8) -> torch.Tensor:
    """(num_groups,) bool: True where the group's rewards are not all equal."""
    return (rewards.max(dim=1).values - rewards.min(dim=1).values) > tol


ADVANTAGES = {
    "grpo": lambda rewards: grpo_advantages(rewards, scale=True),
    "dr_grpo": lambda rewards: grpo_advantages(rewards, scale=False),
}
