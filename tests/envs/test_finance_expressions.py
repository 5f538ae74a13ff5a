"""Finance answers written as the arithmetic over the filing's figures, and the worked
demonstrations that write them."""

import re

import pytest

from tempering.envs.finance import FilingsEnv, StatementsEnv
from tempering.envs.finance.questions import Gold
from tempering.envs.finance.verify import read_expression, score_answer
from tempering.trainer.demos import env_demonstrations

GROWTH = Gold("q", (5230 / 4810 - 1) * 100, "%", 0.0, 0.05)
THOUSANDS = Gold("q", 5_230_000, "USD thousands", 0.005, 0.5)


@pytest.mark.parametrize("reply,passed", [
    ("Answer: (5,230 - 4,810) / 4,810 * 100 %", True), ("Answer: (5230-4810)/4810*100%", True),
    ("**Answer:** 100 * (5,230 − 4,810) / 4,810 %", True), ("Answer: 8.73 %", True),
    ("Answer: (5,230 - 4,810) / 5,230 * 100 %", False),  # the later year as the base: the classic slip
    ("Answer: (5,230 - 4,810) / 4,810 %", False),  # a fraction, not a percentage
    ("Answer: (5,230 - 4,810) / 4,810 * 100 x", False),
])
def test_an_expression_is_graded_as_its_value(reply, passed):
    assert score_answer(GROWTH, reply).passed == passed


def test_units_after_an_expression_count_as_after_a_number():
    assert score_answer(THOUSANDS, "Answer: 5,230 * 1000 USD thousands").passed
    assert score_answer(THOUSANDS, "Answer: 5,230 * 1 USD millions").passed
    assert score_answer(THOUSANDS, "Answer: 5,230 * 1000 USD millions").details["status"] == "wrong_scale"
    assert score_answer(THOUSANDS, "Answer: 5,000 + 230 %").details["status"] == "wrong_unit"
    fraction = score_answer(GROWTH, "Answer: (5,230 - 4,810) / 4,810")
    assert fraction.details["status"] == "wrong_scale"


@pytest.mark.parametrize("text,value", [
    ("(1,234) USD thousands", None),  # an accounting negative, not arithmetic: read as -1,234 below
    ("-1,234", None), ("12.5 % (2023-2024)", None),  # the first figure has no operator after it
    ("1 / 0", None), ("9**9", None), ("7 // 2", None), ("2 ** 3", None),
    ("((((1 + 2))))", 3.0), ("-(-1,234 - 566) / 2", 900.0), ("USD (1,200 + 300) thousand", 1500.0),
    ("(" * 500 + "1" + ")" * 500, None), ("1 + " * 100 + "1", None),  # too long to be an answer: read as its first number
])
def test_what_counts_as_an_expression(text, value):
    found = read_expression(text)
    assert (found and found[0]) == value


def test_nothing_but_numbers_and_four_operators_is_evaluated():
    for reply in ("Answer: __import__('os').system('touch /tmp/x') %", "Answer: (lambda: 1)() %",
                  "Answer: [1, 2][0] + 1 %", "Answer: 2 ** 1000000 %", "Answer: 1e308 * 1e308 %"):
        score = score_answer(GROWTH, reply)
        assert not score.passed and score.details["status"] in ("no_answer", "wrong_number", "wrong_scale")
    assert score_answer(Gold("q", -1234, "USD thousands", 0.005, 0.5), "Answer: (1,234) USD thousands").passed
    assert score_answer(Gold("q", 1134, "USD thousands", 0.005, 0.5), "Answer: (1,234 - 100) USD thousands").passed


@pytest.mark.parametrize("make", [StatementsEnv, FilingsEnv])
def test_every_family_has_a_worked_reply_that_passes_and_shows_its_arithmetic(make):
    env = make()
    for split in ("train", "test", "unseen"):
        for family in env.families:
            for i in range(6):
                task = env.task(split, i, family)
                worked = env.worked_response(task)
                assert env.verify(task, worked).passed, (split, family, i, worked)
                gold = task.reference.gold
                computed = gold.verdict is None and family != "lookup"
                assert bool(re.search(r"\d\s*[-+*/]\s*[\d(]", worked)) == computed, (family, worked)
                if computed:  # a changed figure must fail: the expression is graded, not trusted
                    lead = max(re.finditer(r"\d[\d,]*", worked), key=lambda m: len(m.group(0)))  # the largest figure
                    wrong = worked[:lead.start()] + str(int(worked[lead.start()]) % 9 + 1) + worked[lead.start() + 1:]
                    assert not env.verify(task, wrong).passed, (family, wrong)


def test_worked_demonstrations_replay_to_reward_one():
    demos = env_demonstrations("finance/statements-v1", lambda messages: sum(len(m.content.split()) for m in messages),
                               budget=10**6, kinds={"worked": 1.0}, options={"difficulty": 2, "max_turns": 1},
                               max_tasks=30)
    assert demos.kinds == {"worked": 30} and not demos.dropped
    answers = [row["messages"][-1]["content"] for row in demos.rows]
    computed = [a for a in answers if " / " in a or " * " in a]
    assert len(computed) >= 15, answers  # four of the five difficulty-2 families compute their answer
