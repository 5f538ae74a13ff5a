import math

import torch

from tempering.algorithms import KL_ESTIMATORS, masked_mean, ppo_clip_loss


def test_masked_mean_counts_only_generated_tokens():
    x = torch.tensor([[1.0, 2.0, 100.0], [3.0, 100.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert masked_mean(x, mask).item() == 2.0  # (1 + 2 + 3) / 3 tokens, not a mean of per-row means
    assert masked_mean(x, mask, denom=6.0).item() == 1.0


def test_ppo_clip_loss_hand_computed():
    # Two tokens of one sequence, advantage +1 and eps 0.2:
    #   token 1: ratio e^0.1 = 1.10517 -> inside the clip range, term = -1.10517
    #   token 2: ratio e^0.5 = 1.64872 -> clipped to 1.2, min(1.6487, 1.2) = 1.2, term = -1.2
    logp = torch.tensor([[0.1, 0.5]])
    old = torch.zeros(1, 2)
    out = ppo_clip_loss(logp, old, torch.tensor([1.0]), torch.ones(1, 2), clip_eps=0.2)
    assert math.isclose(out.loss.item(), -(math.exp(0.1) + 1.2) / 2, rel_tol=1e-6)
    assert out.clip_frac.item() == 0.5


def test_ppo_clip_loss_negative_advantage_clips_below():
    # A = -1, ratio e^-0.5 = 0.6065: -min(-0.6065, -0.8) = 0.8 (pessimistic bound)
    out = ppo_clip_loss(torch.tensor([[-0.5]]), torch.zeros(1, 1), torch.tensor([-1.0]), torch.ones(1, 1), clip_eps=0.2)
    assert math.isclose(out.loss.item(), 0.8, rel_tol=1e-6)


def test_ratio_one_gives_plain_policy_gradient():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    out = ppo_clip_loss(logp, logp.detach(), torch.tensor([2.0]), torch.ones(1, 2))
    out.loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-1.0, -1.0]]))  # d/dlogp of -(A * ratio) / 2 tokens


def test_kl_estimators_hand_computed():
    logp, ref = torch.tensor([-1.0]), torch.tensor([-1.5])
    x = -0.5  # ref - logp
    assert math.isclose(KL_ESTIMATORS["k1"](logp, ref).item(), 0.5, rel_tol=1e-6)
    assert math.isclose(KL_ESTIMATORS["k2"](logp, ref).item(), 0.125, rel_tol=1e-6)
    assert math.isclose(KL_ESTIMATORS["k3"](logp, ref).item(), math.exp(x) - 1 - x, rel_tol=1e-6)


def test_kl_zero_when_policy_equals_reference():
    logp = torch.log_softmax(torch.randn(3, 5), -1)
    for name, fn in KL_ESTIMATORS.items():
        assert torch.all(fn(logp, logp) == 0), name
    out = ppo_clip_loss(logp, logp, torch.ones(3), torch.ones(3, 5), ref_logp=logp, beta=0.1)
    assert out.kl.item() == 0.0


def test_kl_term_added_with_beta():
    logp, ref = torch.tensor([[-1.0]]), torch.tensor([[-1.5]])
    base = ppo_clip_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 1))
    with_kl = ppo_clip_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 1), ref_logp=ref, beta=0.5)
    k3 = math.exp(-0.5) - 1 + 0.5
    assert math.isclose(with_kl.loss.item() - base.loss.item(), 0.5 * k3, rel_tol=1e-5)
