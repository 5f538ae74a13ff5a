"""The unbiased pass@k estimator against hand-computed values."""

from __future__ import annotations

from math import comb

import pytest

from tempering.eval.passk import pass_at_k


@pytest.mark.parametrize("n,c,k", [(20, 0, 1), (20, 1, 1), (20, 3, 10), (10, 10, 5), (5, 2, 5), (200, 17, 10)])
def test_matches_the_combinatorial_definition(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))


def test_hand_values():
    assert pass_at_k(20, 1, 1) == pytest.approx(0.05)
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - 1 / 6)  # 1 - C(2,2)/C(4,2)
    assert pass_at_k(3, 0, 2) == 0.0 and pass_at_k(3, 2, 2) == 1.0


def test_bad_arguments():
    with pytest.raises(ValueError):
        pass_at_k(5, 6, 1)
