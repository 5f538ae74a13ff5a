import math

import pytest
import torch

from tempering.algorithms.preference import bradley_terry_loss, dpo_loss


def test_dpo_hand_computed():
    # policy prefers chosen by 1 nat more than the reference does: h = (−1 − −2) − (−3 − −3) = 1
    out = dpo_loss(torch.tensor([-1.0]), torch.tensor([-3.0]), torch.tensor([-2.0]), torch.tensor([-3.0]), beta=0.5)
    assert math.isclose(out.loss.item(), -math.log(1 / (1 + math.exp(-0.5))), rel_tol=1e-6)
    assert out.accuracy.item() == 1.0 and out.margin.item() == 1.0


def test_dpo_at_the_reference_is_log_2():
    x = torch.tensor([-4.0, -7.0])
    out = dpo_loss(x, x - 1, x, x - 1, beta=0.1)  # policy == reference: h = 0
    assert math.isclose(out.loss.item(), math.log(2), rel_tol=1e-6) and out.accuracy.item() == 0.0


def test_ipo_regresses_the_margin_to_one_over_two_beta():
    # beta 0.25 -> target margin 2; h = 1 -> (1 - 2)^2 = 1; h = 2 -> 0
    one = dpo_loss(torch.tensor([0.0]), torch.tensor([-1.0]), torch.tensor([0.0]), torch.tensor([0.0]), 0.25, "ipo")
    two = dpo_loss(torch.tensor([0.0]), torch.tensor([-2.0]), torch.tensor([0.0]), torch.tensor([0.0]), 0.25, "ipo")
    assert one.loss.item() == 1.0 and two.loss.item() == 0.0
    with pytest.raises(ValueError, match="dpo, ipo"):
        dpo_loss(torch.zeros(1), torch.zeros(1), torch.zeros(1), torch.zeros(1), 0.1, "kto")


def test_bradley_terry_hand_computed():
    out = bradley_terry_loss(torch.tensor([2.0, 0.0]), torch.tensor([1.0, 1.0]))
    want = (-math.log(1 / (1 + math.exp(-1))) - math.log(1 / (1 + math.exp(1)))) / 2
    assert math.isclose(out.loss.item(), want, rel_tol=1e-6)
    assert out.accuracy.item() == 0.5 and out.margin.item() == 0.0
