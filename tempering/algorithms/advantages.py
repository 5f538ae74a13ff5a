"""Advantage estimators: pure functions from rewards (and values) to advantages.

Outcome estimators take `rewards` of shape (num_groups, group_size), the scores of
group_size attempts at each of num_groups prompts, and return one advantage per attempt:

    grpo          (r - mean_group) / std_group        Shao et al. 2024, arXiv:2402.03300
    dr_grpo       r - mean_group                      Liu et al. 2025, arXiv:2503.20783
    rloo          r - mean of the *other* attempts    Ahmadian et al. 2024, arXiv:2402.14740
    reinforce_pp  (r - mean_group) / std_batch        Hu 2025, arXiv:2501.03262

Dr. GRPO drops the std division, which up-weights prompts that are nearly always right or
nearly always wrong. RLOO's leave-one-out baseline makes each attempt's baseline
independent of its own reward (so the estimate is unbiased); it equals dr_grpo scaled by
n / (n - 1). REINFORCE++ normalises by the std of the whole batch rather than each group,
which keeps one easy prompt's tiny spread from blowing up its advantages; subtracting
the group mean first is the paper's "baseline" variant for group sampling.

`group_advantages` takes groups of different sizes (attempts an infrastructure failure left
out): each group gets exactly what the estimator gives the groups as they are.

PPO's `gae` (Schulman et al. 2016, arXiv:1506.02438) instead uses a learned value per token;
`outcome_rewards` puts each attempt's score on its last generated token and `whitened_gae`
runs GAE over a batch of groups, then whitens the advantages over every generated token.
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


def rloo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """Leave-one-out baseline: A_i = r_i - mean_{j != i} r_j. Needs group_size >= 2.

    >>> rloo_advantages(torch.tensor([[1.0, 0.0, 0.0]]))
    tensor([[ 1.0000, -0.5000, -0.5000]])
    """
    n = rewards.shape[1]
    if n < 2:
        raise ValueError("RLOO needs at least 2 attempts per prompt (group_size >= 2)")
    others = (rewards.sum(dim=1, keepdim=True) - rewards) / (n - 1)  # (G, n)
    return rewards - others


def reinforce_pp_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """Group-mean baseline, then normalised by the std over every attempt in the batch.

    >>> reinforce_pp_advantages(torch.tensor([[1.0, 0.0], [3.0, 3.0]]))
    tensor([[ 1.2247, -1.2247],
            [ 0.0000,  0.0000]])
    """
    centred = rewards - rewards.mean(dim=1, keepdim=True)  # (G, n)
    return centred / (centred.std() + eps) if centred.numel() > 1 else centred


def gae(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, gamma: float = 1.0,
        lam: float = 0.95) -> tuple[torch.Tensor, torch.Tensor]:
    """Generalised advantage estimation over the tokens where mask is 1.

    rewards, values, mask: (B, T) per-token rewards (the outcome on the last generated
    token, KL penalties on any), critic values, and 1 on generated tokens. Tokens with
    mask 0 (padding, or env feedback between turns) are skipped: the next generated token
    follows directly. Returns (advantages, returns), both (B, T) and 0 where mask is 0.

        delta_t = r_t + gamma * V_next - V_t;   A_t = delta_t + gamma * lam * A_next
    """
    advantages = torch.zeros_like(rewards)
    next_value = torch.zeros_like(rewards[:, 0])  # (B,) 0 after the last token: the episode ends
    next_adv = torch.zeros_like(rewards[:, 0])
    for t in reversed(range(rewards.shape[1])):
        on = mask[:, t] > 0
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        adv = delta + gamma * lam * next_adv
        advantages[:, t] = torch.where(on, adv, torch.zeros_like(adv))
        next_adv = torch.where(on, adv, next_adv)
        next_value = torch.where(on, values[:, t], next_value)
    returns = (advantages + values) * mask
    return advantages, returns


def outcome_rewards(rewards: torch.Tensor, mask: torch.Tensor, base: torch.Tensor | None = None) -> torch.Tensor:
    """(B, T) per-token rewards: `base` (0 if None; a KL penalty per token, say) plus each
    attempt's outcome rewards (B,) on its last token where mask is 1. A row with no such
    token gets nothing added.

    >>> outcome_rewards(torch.tensor([1.0, 2.0]), torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0]]))
    tensor([[0., 1., 0.],
            [0., 0., 2.]])
    """
    out = torch.zeros_like(mask) if base is None else base.clone()
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)  # (B, T)
    last = torch.where(mask > 0, positions, torch.full_like(positions, -1)).max(dim=1).values  # (B,)
    rows = torch.nonzero(last >= 0).flatten()
    out[rows, last[rows]] += rewards[rows]
    return out


def whitened_gae(rewards: list[torch.Tensor], values: list[torch.Tensor], masks: list[torch.Tensor],
                 gamma: float = 1.0, lam: float = 0.95, eps: float = 1e-6) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """PPO's advantages for a batch of groups: `gae` per group (Schulman et al. 2016,
    arXiv:1506.02438), then whitened to mean 0 and std 1 over every token where mask is 1,
    across the whole batch (as PPO implementations normalise advantages per batch).

    rewards, values, masks: one (G, C) tensor per group (widths may differ). Returns
    (advantages, returns), one (G, C) each per group; advantages are 0 off the mask and
    returns are GAE's, before whitening (the critic's targets).
    """
    advantages, returns = [], []
    for r, v, m in zip(rewards, values, masks):
        adv, ret = gae(r, v, m, gamma=gamma, lam=lam)
        advantages.append(adv)
        returns.append(ret)
    flat = torch.cat([adv[m > 0] for adv, m in zip(advantages, masks)])  # every generated token's advantage
    mean, std = flat.mean(), flat.std() if flat.numel() > 1 else torch.tensor(1.0)
    return [(adv - mean) / (std + eps) * m for adv, m in zip(advantages, masks)], returns


def group_has_signal(rewards: torch.Tensor, tol: float = 1e-8) -> torch.Tensor:
    """(num_groups,) bool: True where the group's rewards are not all equal."""
    return (rewards.max(dim=1).values - rewards.min(dim=1).values) > tol


def group_advantages(name: str, rewards: list[torch.Tensor], eps: float = 1e-6) -> list[torch.Tensor]:
    """The outcome estimator `name` over groups of any sizes: rewards[i] is (G_i,), and so is
    the result. Groups of one size go through the estimator together as (N, G). Otherwise
    grpo, dr_grpo and rloo take each group alone (their statistics are per group), and
    reinforce_pp's batch std is the std over every attempt of every group, so the advantages
    are those of a batch in which the missing attempts never existed.

    >>> group_advantages("dr_grpo", [torch.tensor([1.0, 0.0, 0.0]), torch.tensor([2.0, 0.0])])
    [tensor([ 0.6667, -0.3333, -0.3333]), tensor([ 1., -1.])]
    """
    if len({len(r) for r in rewards}) <= 1:
        return list(ADVANTAGES[name](torch.stack(rewards))) if rewards else []
    if name == "reinforce_pp":  # the one estimator whose scale couples the groups
        centred = [r - r.mean() for r in rewards]
        flat = torch.cat(centred)
        return [c / (flat.std() + eps) if flat.numel() > 1 else c for c in centred]
    return [ADVANTAGES[name](r.unsqueeze(0))[0] for r in rewards]


ADVANTAGES = {
    "grpo": lambda rewards: grpo_advantages(rewards, scale=True),
    "dr_grpo": lambda rewards: grpo_advantages(rewards, scale=False),
    "rloo": rloo_advantages,
    "reinforce_pp": reinforce_pp_advantages,
}
"""Outcome estimators by name: (num_groups, group_size) rewards -> advantages."""
