"""Advantage estimators and losses: pure functions on tensors, one explicit dict per file."""

from tempering.algorithms.advantages import ADVANTAGES, grpo_advantages, group_has_signal
from tempering.algorithms.kl import KL_ESTIMATORS, kl_k1, kl_k2, kl_k3
from tempering.algorithms.losses import POLICY_LOSSES, PolicyLossOutput, masked_mean, ppo_clip_loss

__all__ = [
    "ADVANTAGES", "KL_ESTIMATORS", "POLICY_LOSSES", "PolicyLossOutput", "grpo_advantages",
    "group_has_signal", "kl_k1", "kl_k2", "kl_k3", "masked_mean", "ppo_clip_loss",
]
