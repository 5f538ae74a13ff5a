import math

import pytest
import torch

from tempering.algorithms import KL_ESTIMATORS, masked_mean
from tempering.algorithms.kl import AdaptiveKL
from tempering.algorithms.losses import Norm, aggregate, overlong_penalty, policy_loss, value_loss


def test_masked_mean_counts_only_generated_tokens():
    x = torch.tensor([[1.0, 2.0, 100.0], [3.0, 100.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert masked_mean(x, mask).item() == 2.0  # (1 + 2 + 3) / 3 tokens, not a mean of per-row means
    assert masked_mean(x, mask, denom=6.0).item() == 1.0


def test_the_three_aggregations_hand_computed():
    x = torch.tensor([[1.0, 2.0, 100.0], [3.0, 100.0, 100.0]])
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    assert aggregate(x, mask, "token_mean").item() == 2.0                      # (1 + 2 + 3) / 3
    assert aggregate(x, mask, "seq_mean_token_mean").item() == 2.25            # (1.5 + 3) / 2
    norm = Norm.of(mask, max_len=4)
    assert aggregate(x, mask, "seq_mean_token_sum_norm", norm).item() == 0.75  # (3 + 3) / (4 * 2)
    with pytest.raises(ValueError, match="token_mean"):
        aggregate(x, mask, "bogus")


@pytest.mark.parametrize("agg", ["token_mean", "seq_mean_token_mean", "seq_mean_token_sum_norm"])
def test_micro_batches_add_up_to_the_whole_batch(agg):
    torch.manual_seed(0)
    x = torch.randn(6, 5)
    mask = (torch.rand(6, 5) > 0.3).float()
    mask[:, 0] = 1
    norm = Norm.of(mask, max_len=5)
    whole = aggregate(x, mask, agg, norm)
    parts = sum(aggregate(x[i:i + 2], mask[i:i + 2], agg, norm) for i in range(0, 6, 2))
    assert torch.allclose(whole, parts, atol=1e-6)


def test_clipped_loss_hand_computed():
    # Two tokens of one sequence, advantage +1 and eps 0.2:
    #   token 1: ratio e^0.1 = 1.10517 -> inside the clip range, term = -1.10517
    #   token 2: ratio e^0.5 = 1.64872 -> clipped to 1.2, min(1.6487, 1.2) = 1.2, term = -1.2
    logp = torch.tensor([[0.1, 0.5]])
    out = policy_loss(logp, torch.zeros(1, 2), torch.tensor([1.0]), torch.ones(1, 2), clip_low=0.2)
    assert math.isclose(out.loss.item(), -(math.exp(0.1) + 1.2) / 2, rel_tol=1e-6)
    assert out.clip_frac.item() == 0.5


def test_clip_higher_raises_only_the_upper_bound():
    # DAPO clip-higher (0.2, 0.28): ratio e^0.5 is clipped at 1.28 instead of 1.2 for A > 0 ...
    out = policy_loss(torch.tensor([[0.5]]), torch.zeros(1, 1), torch.tensor([1.0]), torch.ones(1, 1),
                      clip_low=0.2, clip_high=0.28)
    assert math.isclose(out.loss.item(), -1.28, rel_tol=1e-6)
    # ... and for A < 0 the lower bound is still 0.8: ratio e^-0.5 = 0.6065 -> -min(-0.6065, -0.8) = 0.8
    out = policy_loss(torch.tensor([[-0.5]]), torch.zeros(1, 1), torch.tensor([-1.0]), torch.ones(1, 1),
                      clip_low=0.2, clip_high=0.28)
    assert math.isclose(out.loss.item(), 0.8, rel_tol=1e-6)


def test_ratio_is_one_on_the_first_epoch_and_gives_the_plain_policy_gradient():
    logp = torch.tensor([[-1.0, -2.0]], requires_grad=True)
    out = policy_loss(logp, logp.detach(), torch.tensor([2.0]), torch.ones(1, 2))
    assert out.clip_frac.item() == 0.0 and out.loss.item() == -2.0  # ratio exactly 1: -(A * 1) averaged
    out.loss.backward()
    assert torch.allclose(logp.grad, torch.tensor([[-1.0, -1.0]]))  # d/dlogp of -(A * ratio) / 2 tokens


def test_per_token_advantages():
    logp = torch.zeros(1, 2, requires_grad=True)
    out = policy_loss(logp, logp.detach(), torch.tensor([[1.0, -3.0]]), torch.ones(1, 2))
    assert out.loss.item() == 1.0  # -(1 - 3) / 2


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
    out = policy_loss(logp, logp, torch.ones(3), torch.ones(3, 5), ref_logp=logp, beta=0.1)
    assert out.kl.item() == 0.0


def test_kl_term_added_with_beta():
    logp, ref = torch.tensor([[-1.0]]), torch.tensor([[-1.5]])
    base = policy_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 1))
    with_kl = policy_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 1), ref_logp=ref, beta=0.5)
    k3 = math.exp(-0.5) - 1 + 0.5
    assert math.isclose(with_kl.loss.item() - base.loss.item(), 0.5 * k3, rel_tol=1e-5)


def test_entropy_bonus_lowers_the_loss_by_coef_times_entropy():
    logp = torch.zeros(1, 2)
    entropy = torch.tensor([[2.0, 4.0]])
    out = policy_loss(logp, logp, torch.tensor([0.0]), torch.ones(1, 2), entropy=entropy, entropy_coef=0.1)
    assert math.isclose(out.loss.item(), -0.1 * 3.0, rel_tol=1e-6) and out.entropy.item() == 3.0


def test_adaptive_kl_moves_beta_toward_the_target():
    ctl = AdaptiveKL(0.1, target=0.05, horizon=10)
    assert math.isclose(ctl.update(0.2), 0.1 * 1.02)          # KL 4x the target: error 3 -> clipped 0.2, /10
    assert math.isclose(ctl.update(0.025), 0.1 * 1.02 * 0.98)  # half the target: error -0.5 -> clipped -0.2, /10
    fixed = AdaptiveKL(0.1)
    assert fixed.update(5.0) == 0.1


def test_value_loss_hand_computed():
    # V 1.0 (was 0.5), R 0.0, clip 0.2: unclipped err 1.0, clipped V 0.7 -> 0.49; max -> 1.0; 0.5 * 1.0
    loss = value_loss(torch.tensor([[1.0]]), torch.tensor([[0.5]]), torch.tensor([[0.0]]), torch.ones(1, 1), clip=0.2)
    assert loss.item() == 0.5
    # moving toward the target past the clip: V 0.0 (was 0.5), R 0.0: err 0, clipped V 0.3 -> 0.09; max -> 0.09
    loss = value_loss(torch.tensor([[0.0]]), torch.tensor([[0.5]]), torch.tensor([[0.0]]), torch.ones(1, 1), clip=0.2)
    assert math.isclose(loss.item(), 0.5 * 0.09, rel_tol=1e-6)


def test_overlong_penalty():
    pen = overlong_penalty(torch.tensor([10, 12, 14, 16, 20]), max_len=16, buffer=4)
    assert pen.tolist() == [0.0, -0.0, -0.5, -1.0, -1.0]
    assert overlong_penalty(torch.tensor([16, 17]), max_len=16, buffer=0).tolist() == [0.0, -1.0]
