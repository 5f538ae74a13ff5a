"""The finance verifier: amounts read in the unit asked for, signs, percentages, ratios,
yes/no verdicts with partial credit for a wrong figure."""

import pytest

from tempering.envs.finance.questions import Gold
from tempering.envs.finance.verify import PARTIAL_CREDIT, score_answer

THOUSANDS = Gold("q", 12_500, "USD thousands", 0.005, 0.5)


@pytest.mark.parametrize("reply,status", [
    ("Answer: 12,500 USD thousands", "correct"), ("Answer: 12,500", "correct"), ("Answer: 12.5 million", "correct"),
    ("Answer: $12.5M", "correct"), ("Answer: USD 12,500 thousand", "correct"), ("**Answer:** 0.0125 bn", "correct"),
    ("Answer: 12.5", "wrong_scale"), ("Answer: 12,500 USD millions", "wrong_scale"),
    ("Answer: 12,500 EUR thousands", "wrong_unit"), ("Answer: 12,500%", "wrong_unit"),
    ("Answer: 12,800 USD thousands", "wrong_number"), ("Answer: unknown", "no_answer"), ("It is 12,500.", "no_answer"),
])
def test_amounts_are_read_in_the_unit_asked_for(reply, status):
    score = score_answer(THOUSANDS, reply)
    assert score.details["status"] == status
    assert score.passed == (status == "correct") and score.value == (1.0 if status == "correct" else 0.0)


@pytest.mark.parametrize("reply,passed", [
    ("Answer: (1,234) USD thousands", True), ("Answer: -1,234", True), ("Answer: $(1.234) million", True),
    ("Answer: USD -1,234 thousand", True), ("Answer: 1,234 USD thousands", False),
])
def test_parentheses_and_minus_signs_are_negative(reply, passed):
    assert score_answer(Gold("q", -1234, "USD thousands", 0.005, 0.5), reply).passed == passed


@pytest.mark.parametrize("reply,passed", [
    ("Answer: 12.34 %", True), ("Answer: 12.3 percent", True), ("**Answer:** 12.36%", True),
    ("Answer: FY2023 margin was 12.34%", True), ("Answer: 12.40%", False), ("Answer: 0.1234", False),
    ("Answer: 12.34 x", False), ("Answer: 12.34%\nOn reflection:\nAnswer: 15.00%", False),
])
def test_percentages_use_an_absolute_tolerance(reply, passed):
    assert score_answer(Gold("q", 12.34, "%", 0.0, 0.05), reply).passed == passed


def test_scale_mistakes_are_named_but_the_figure_is_not():
    percent = score_answer(Gold("q", 12.34, "%", 0.0, 0.05), "Answer: 0.1234")
    assert percent.details["status"] == "wrong_scale" and "fraction" in percent.details["feedback"]
    wrong = score_answer(Gold("q", 2_345_678, "USD thousands", 0.005, 0.5), "Answer: 2,000,000 USD thousands")
    assert wrong.details["status"] == "wrong_number" and wrong.details["extracted"] == 2_000_000
    assert "2,000,000 USD thousands is outside the tolerance" in wrong.details["feedback"]
    assert "2,345" not in wrong.details["feedback"]


@pytest.mark.parametrize("reply,status", [
    ("Answer: 1,234,567 USD", "correct"), ("Answer: 1.234567 million", "correct"),
    ("Answer: 1,234.567 USD thousands", "correct"), ("Answer: 1,234.567", "wrong_scale"),
    ("Answer: 1,234,567 EUR", "wrong_unit"),
])
def test_plain_currency_amounts(reply, status):
    assert score_answer(Gold("q", 1_234_567, "USD", 0.001, 0.5), reply).details["status"] == status


def test_ratios():
    gold = Gold("q", 1.834, "x", 0.0, 0.01)
    assert score_answer(gold, "Answer: 1.83x").passed and score_answer(gold, "Answer: 1.834 times").passed
    assert not score_answer(gold, "Answer: 1.85x").passed
    assert score_answer(gold, "Answer: 183.4%").details["status"] == "wrong_unit"


@pytest.mark.parametrize("reply,value,status", [
    ("Answer: no (2.45x)", 1.0, "correct"), ("Answer: No, 2.449 x", 1.0, "correct"),
    ("Answer: no", PARTIAL_CREDIT, "missing_figure"), ("Answer: no (3.10x)", PARTIAL_CREDIT, "wrong_figure"),
    ("Answer: no (2.45%)", PARTIAL_CREDIT, "wrong_unit"), ("Answer: yes (2.45x)", 0.0, "wrong_verdict"),
    ("Answer: 2.45x", 0.0, "no_answer"),
])
def test_yes_no_partial_credit(reply, value, status):
    score = score_answer(Gold("q", 2.45, "x", 0.0, 0.01, verdict=False), reply)
    assert (score.value, score.details["status"]) == (value, status)
    assert not score.passed or value == 1.0


def test_cited_difference_is_compared_by_magnitude():
    gold = Gold("q", 1250, "USD thousands", 0.005, 0.5, verdict=False)
    assert score_answer(gold, "Answer: no (1,250 USD thousands)").passed
    assert score_answer(gold, "Answer: no (difference of -1.25 million)").passed
    assert score_answer(gold, "Answer: no (1,250 USD millions)").value == PARTIAL_CREDIT
