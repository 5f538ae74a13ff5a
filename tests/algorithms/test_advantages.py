import math

import pytest
import torch

from tempering.algorithms import ADVANTAGES, grpo_advantages, group_has_signal
from tempering.algorithms.advantages import (gae, group_advantages, outcome_rewards, reinforce_pp_advantages,
                                             rloo_advantages, whitened_gae)


def test_grpo_advantages_hand_computed():
    # rewards [1, 0, 0, 1]: mean 0.5, unbiased std sqrt(1/3) = 0.57735 -> +-0.5 / 0.57735 = +-0.866025
    adv = grpo_advantages(torch.tensor([[1.0, 0.0, 0.0, 1.0]]), eps=0.0)
    assert torch.allclose(adv, torch.tensor([[0.866025, -0.866025, -0.866025, 0.866025]]), atol=1e-6)


def test_grpo_advantages_three_values():
    # rewards [2, 0, 1]: mean 1, std 1 -> [1, -1, 0]
    adv = grpo_advantages(torch.tensor([[2.0, 0.0, 1.0]]), eps=0.0)
    assert torch.allclose(adv, torch.tensor([[1.0, -1.0, 0.0]]))


def test_dr_grpo_only_centres():
    adv = ADVANTAGES["dr_grpo"](torch.tensor([[1.0, 0.0, 0.0, 0.0]]))
    assert torch.allclose(adv, torch.tensor([[0.75, -0.25, -0.25, -0.25]]))


def test_zero_variance_group_gives_zero_advantage_and_no_signal():
    rewards = torch.tensor([[1.0, 1.0, 1.0], [0.0, 1.0, 0.0]])
    adv = grpo_advantages(rewards)
    assert torch.equal(adv[0], torch.zeros(3))
    assert group_has_signal(rewards).tolist() == [False, True]


def test_groups_are_normalised_independently():
    rewards = torch.tensor([[1.0, 0.0], [10.0, 0.0]])
    adv = grpo_advantages(rewards, eps=0.0)
    assert torch.allclose(adv[0], adv[1])  # scale-free within each group


def test_rloo_hand_computed():
    # rewards [1, 0, 0, 1]: baseline of attempt 0 is mean(0, 0, 1) = 1/3 -> 2/3; of attempt 1 is 2/3 -> -2/3
    adv = ADVANTAGES["rloo"](torch.tensor([[1.0, 0.0, 0.0, 1.0]]))
    assert torch.allclose(adv, torch.tensor([[2 / 3, -2 / 3, -2 / 3, 2 / 3]]))


def test_rloo_is_dr_grpo_scaled_by_n_over_n_minus_1():
    rewards = torch.rand(5, 6)
    assert torch.allclose(rloo_advantages(rewards), grpo_advantages(rewards, scale=False) * 6 / 5, atol=1e-6)
    with pytest.raises(ValueError, match="at least 2"):
        rloo_advantages(torch.ones(3, 1))


def test_reinforce_pp_normalises_by_the_batch_not_the_group():
    # centred [[0.5, -0.5], [1, -1]]; batch std (unbiased, 4 values) = sqrt((0.25*2 + 1*2) / 3) = 0.91287
    adv = reinforce_pp_advantages(torch.tensor([[1.0, 0.0], [2.0, 0.0]]), eps=0.0)
    s = (2.5 / 3) ** 0.5
    assert torch.allclose(adv, torch.tensor([[0.5 / s, -0.5 / s], [1 / s, -1 / s]]))
    # GRPO would give both groups the same +-0.7071: the group with the bigger gap would not count more
    assert not torch.allclose(adv[0], adv[1])


def test_gae_hand_computed():
    # One sequence of 3 tokens, outcome reward 1 on the last, values [0.5, 0.6, 0.8], gamma 1, lam 0.5:
    #   delta_2 = 1 + 0 - 0.8 = 0.2;       A_2 = 0.2
    #   delta_1 = 0 + 0.8 - 0.6 = 0.2;     A_1 = 0.2 + 0.5 * 0.2 = 0.3
    #   delta_0 = 0 + 0.6 - 0.5 = 0.1;     A_0 = 0.1 + 0.5 * 0.3 = 0.25
    rewards = torch.tensor([[0.0, 0.0, 1.0]])
    values = torch.tensor([[0.5, 0.6, 0.8]])
    adv, ret = gae(rewards, values, torch.ones(1, 3), gamma=1.0, lam=0.5)
    assert torch.allclose(adv, torch.tensor([[0.25, 0.3, 0.2]]))
    assert torch.allclose(ret, torch.tensor([[0.75, 0.9, 1.0]]))


def test_gae_skips_masked_tokens_and_padding():
    # The same episode with a feedback token (mask 0) in the middle and padding at the end:
    # the generated tokens get exactly the advantages of the contiguous case.
    rewards = torch.tensor([[0.0, 0.0, 0.0, 1.0, 0.0]])
    values = torch.tensor([[0.5, 9.0, 0.6, 0.8, 9.0]])
    mask = torch.tensor([[1.0, 0.0, 1.0, 1.0, 0.0]])
    adv, _ = gae(rewards, values, mask, gamma=1.0, lam=0.5)
    assert torch.allclose(adv, torch.tensor([[0.25, 0.0, 0.3, 0.2, 0.0]]))


def test_gae_with_lambda_one_is_return_minus_value():
    rewards = torch.tensor([[0.1, -0.2, 1.0]])
    values = torch.tensor([[0.3, 0.1, 0.4]])
    adv, ret = gae(rewards, values, torch.ones(1, 3), gamma=1.0, lam=1.0)
    assert torch.allclose(ret, torch.tensor([[0.9, 0.8, 1.0]]))  # rewards-to-go
    assert torch.allclose(adv, ret - values)


def test_outcome_rewards_land_on_the_last_generated_token():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 1.0], [0.0, 0.0, 0.0]])  # row 2 generated nothing
    base = torch.tensor([[-0.1, -0.2, 0.0], [0.0, 0.0, -0.3], [0.0, 0.0, 0.0]])  # a KL penalty per token, say
    out = outcome_rewards(torch.tensor([1.0, 2.0, 5.0]), mask, base)
    assert torch.allclose(out, torch.tensor([[-0.1, 0.8, 0.0], [0.0, 0.0, 1.7], [0.0, 0.0, 0.0]]))
    assert torch.equal(base[0], torch.tensor([-0.1, -0.2, 0.0]))  # the base is not changed in place


def test_whitened_gae_hand_computed():
    # Two groups of one attempt each, gamma 1, lam 1 (A = return - value):
    #   group a: rewards [0, 1], values [0.5, 0.5]           -> A = [0.5, 0.5],    returns [1, 1]
    #   group b: rewards [0, 0, _], values [0.5, 0.25, 9],
    #            third token masked                           -> A = [-0.5, -0.25], returns [0, 0, 0]
    # Whitened over the 4 generated tokens: mean 0.0625, unbiased std sqrt(0.796875 / 3).
    rewards = [torch.tensor([[0.0, 1.0]]), torch.tensor([[0.0, 0.0, 0.0]])]
    values = [torch.tensor([[0.5, 0.5]]), torch.tensor([[0.5, 0.25, 9.0]])]
    masks = [torch.ones(1, 2), torch.tensor([[1.0, 1.0, 0.0]])]
    adv, ret = whitened_gae(rewards, values, masks, gamma=1.0, lam=1.0, eps=0.0)
    mean, std = 0.0625, math.sqrt(0.796875 / 3)
    assert torch.allclose(adv[0], torch.tensor([[(0.5 - mean) / std, (0.5 - mean) / std]]))
    assert torch.allclose(adv[1], torch.tensor([[(-0.5 - mean) / std, (-0.25 - mean) / std, 0.0]]))
    assert torch.allclose(ret[0], torch.tensor([[1.0, 1.0]])) and torch.allclose(ret[1], torch.zeros(1, 3))
    flat = torch.cat([adv[0].flatten(), adv[1][0, :2]])
    assert abs(float(flat.mean())) < 1e-6 and abs(float(flat.std()) - 1.0) < 1e-6


def _by_hand(name: str, groups: list[list[float]]) -> list[list[float]]:
    """Each estimator written out on plain lists, for groups of any sizes."""
    import statistics as st

    if name == "reinforce_pp":  # centred per group, scaled by the std over every attempt there is
        centred = [[r - st.mean(g) for r in g] for g in groups]
        std = st.stdev([c for g in centred for c in g])
        return [[c / (std + 1e-6) for c in g] for g in centred]
    if name == "rloo":
        return [[r - (sum(g) - r) / (len(g) - 1) for r in g] for g in groups]
    scale = name == "grpo"
    return [[(r - st.mean(g)) / ((st.stdev(g) + 1e-6) if scale else 1.0) for r in g] for g in groups]


@pytest.mark.parametrize("name", sorted(ADVANTAGES))
def test_a_group_missing_infra_failed_attempts_gets_the_advantages_of_the_group_without_them(name):
    """Attempts the sandbox failed are left out (trainer/group.py): the others' advantages are
    those of a batch in which the failed attempts never existed."""
    full = [[1.0, 0.0, 0.5, 1.0], [0.0, 1.0, 1.0, 0.0], [0.25, 1.0, 0.0, 0.0]]
    failed = [{2}, set(), {0, 3}]  # which attempts of each group the sandbox failed
    kept = [[r for j, r in enumerate(g) if j not in f] for g, f in zip(full, failed)]
    got = group_advantages(name, [torch.tensor(g) for g in kept])
    assert [len(a) for a in got] == [3, 4, 2]
    for a, want in zip(got, _by_hand(name, kept)):
        assert torch.allclose(a, torch.tensor(want), atol=1e-6, rtol=0)


@pytest.mark.parametrize("name", sorted(ADVANTAGES))
def test_groups_of_one_size_are_estimated_exactly_as_before(name):
    rewards = torch.tensor([[1.0, 0.0, 0.5, 1.0], [0.0, 1.0, 1.0, 0.0]])
    got = group_advantages(name, list(rewards))
    assert all(torch.equal(a, b) for a, b in zip(got, ADVANTAGES[name](rewards)))
