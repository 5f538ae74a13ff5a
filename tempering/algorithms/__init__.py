"""Advantage estimators and losses: pure functions on tensors, one explicit dict per file."""

from tempering.algorithms.advantages import (ADVANTAGES, gae, grpo_advantages, group_has_signal, outcome_rewards,
                                             whitened_gae)
from tempering.algorithms.kl import KL_ESTIMATORS, AdaptiveKL, kl_k1, kl_k2, kl_k3
from tempering.algorithms.losses import AGGREGATIONS, Norm, PolicyLossOutput, masked_mean, policy_loss, value_loss
from tempering.algorithms.preference import bradley_terry_loss, dpo_loss

__all__ = [
    "ADVANTAGES", "AGGREGATIONS", "KL_ESTIMATORS", "AdaptiveKL", "Norm", "PolicyLossOutput", "bradley_terry_loss",
    "dpo_loss", "gae", "grpo_advantages", "group_has_signal", "kl_k1", "kl_k2", "kl_k3", "masked_mean",
    "outcome_rewards", "policy_loss", "value_loss", "whitened_gae",
]
