import torch

from tempering.algorithms import ADVANTAGES, grpo_advantages, group_has_signal


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
