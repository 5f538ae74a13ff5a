"""Preference losses: pure functions on per-pair tensors.

A pair is one prompt with a chosen and a rejected response. The DPO family compares how
much more the policy prefers the chosen response than the frozen reference does:

    h = (log pi(c) - log ref(c)) - (log pi(r) - log ref(r))

    dpo  -log sigmoid(beta h)               Rafailov et al. 2023, arXiv:2305.18290
    ipo  (h - 1 / (2 beta))^2               Azar et al. 2023, arXiv:2310.12036

DPO keeps pushing h up for pairs it already gets right, which can drive both responses'
likelihoods down; IPO regresses h to a fixed margin instead. As in common practice, IPO
uses length-averaged log-probs (so long responses do not dominate the margin) and DPO
summed ones.

A reward model learns a scalar score s with the Bradley-Terry likelihood
P(c > r) = sigmoid(s(c) - s(r)).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

DPO_LOSSES = ("dpo", "ipo")


@dataclass(frozen=True)
class PreferenceLossOutput:
    loss: torch.Tensor
    """Scalar to backpropagate (mean over pairs)."""
    accuracy: torch.Tensor
    """Fraction of pairs where the chosen side scores higher."""
    margin: torch.Tensor
    """Mean of h (DPO/IPO) or s(c) - s(r) (reward model)."""


def dpo_loss(policy_chosen: torch.Tensor, policy_rejected: torch.Tensor, ref_chosen: torch.Tensor,
             ref_rejected: torch.Tensor, beta: float = 0.1, kind: str = "dpo") -> PreferenceLossOutput:
    """(P,) sequence log-probs of each pair's chosen and rejected response under the policy
    and the reference (summed for dpo, length-averaged for ipo: see the module doc)."""
    h = (policy_chosen - ref_chosen) - (policy_rejected - ref_rejected)  # (P,)
    if kind == "dpo":
        losses = -F.logsigmoid(beta * h)
    elif kind == "ipo":
        losses = (h - 1.0 / (2.0 * beta)) ** 2
    else:
        raise ValueError(f"unknown preference loss {kind!r}: use one of {', '.join(DPO_LOSSES)}")
    return PreferenceLossOutput(loss=losses.mean(), accuracy=(h > 0).float().mean(), margin=h.mean())


def bradley_terry_loss(chosen: torch.Tensor, rejected: torch.Tensor, margin: float = 0.0) -> PreferenceLossOutput:
    """Reward-model loss: -log sigmoid(s(c) - s(r) - margin) over (P,) scalar scores."""
    diff = chosen - rejected
    return PreferenceLossOutput(loss=-F.logsigmoid(diff - margin).mean(), accuracy=(diff > 0).float().mean(),
                                margin=diff.mean())
