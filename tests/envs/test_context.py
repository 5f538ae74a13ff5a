"""envs.context.compress: what survives a token budget, and that the budget holds."""

from __future__ import annotations

import random

import pytest

from tempering.errors import TaskError
from tempering.envs.context import compress, cut_middle, reduce_feedback, reduce_reply
from tempering.types import Message


def words(text: str) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word."""
    return len(text.split())


def size(messages: list[Message]) -> int:
    return sum(words(m.content) for m in messages)


SYSTEM = Message("system", "You are a careful programmer.")
GOAL = Message("user", "Write parse(line) that returns the fields of a CSV line as a list.")
OLD_CODE = Message("assistant", "Decision: split on commas first, handle quotes later.\n```python\n"
                   "def parse(line):\n    fields = line.split(',')\n    fields = [f.strip() for f in fields]\n"
                   "    fields = [f for f in fields if f != '']\n    return fields\n```")
OLD_LOG = Message("user", "\n".join([f"debug: row {i} parsed into three fields ok" for i in range(60)] + [
    "Traceback (most recent call last):",
    '  File "harness.py", line 9, in run',
    "    check(candidate)",
    '  File "solution.py", line 3, in parse',
    "    return fields[5]",
    "IndexError: list index out of range",
]))
NEW_CODE = Message("assistant", "```python\ndef parse(line):\n    import csv\n    return next(csv.reader([line]))\n```")
NEW_LOG = Message("user", "\n".join(["FAIL case 2"] + [f"trace: step {i} of the reader" for i in range(40)] + [
    "AssertionError: case 2: expected ['a', 'b,c'], got ['a', 'b', 'c']",
]))
CONVERSATION = [SYSTEM, GOAL, OLD_CODE, OLD_LOG, NEW_CODE, NEW_LOG]


def test_a_conversation_that_fits_comes_back_unchanged():
    assert compress(CONVERSATION, words, size(CONVERSATION)) == CONVERSATION


def test_keeps_goal_latest_code_and_error_reduces_old_turns_and_drops_the_log():
    full = size(CONVERSATION)
    out = compress(CONVERSATION, words, full - 100)
    assert size(out) <= full - 100
    assert out[:2] == [SYSTEM, GOAL]
    assert out[-2:] == [NEW_CODE, NEW_LOG]  # the current work and what is wrong with it, in full
    old_code, old_log = out[2].content, out[3].content
    assert "def parse(line):" in old_code and "Decision: split on commas" in old_code
    assert "fields = line.split" not in old_code
    assert "IndexError: list index out of range" in old_log
    assert 'File "solution.py", line 3, in parse' in old_log and "return fields[5]" in old_log
    assert "debug: row" not in old_log and "harness.py" not in old_log  # log and outer frames dropped


@pytest.mark.parametrize("seed", range(6))
def test_every_budget_from_the_goal_up_is_respected(seed):
    rng = random.Random(seed)
    messages = [SYSTEM, GOAL]
    for turn in range(rng.randint(1, 6)):
        body = [f"    x = x + {i}" for i in range(rng.randint(1, 30))]
        code = "\n".join(["```python", f"def step{turn}(x):", *body, "```"])
        log = "\n".join([f"log line {i} " + "word " * rng.randint(0, 12) for i in range(rng.randint(0, 80))]
                        + [f"ValueError: turn {turn} went wrong"])
        messages += [Message("assistant", code), Message("user", log)]
    goal, full = size(messages[:2]), size(messages)
    for budget in sorted({goal, goal + 1, goal + 7, (goal + full) // 2, full - 1, full}):
        out = compress(messages, words, budget)
        assert size(out) <= budget, budget
        assert out[:2] == messages[:2]
        assert out == compress(messages, words, budget)  # deterministic
        if budget == full:
            assert out == messages


def test_old_turns_go_first_then_the_latest_feedback_is_cut_in_the_middle():
    many = [SYSTEM, GOAL] + [OLD_CODE, OLD_LOG] * 3 + [NEW_CODE, NEW_LOG]
    budget = size([SYSTEM, GOAL, NEW_CODE]) + 90
    out = compress(many, words, budget)
    assert size(out) <= budget
    assert out[2].content.startswith("[3 earlier turns elided")
    assert out[3] == NEW_CODE
    cut = out[4].content
    assert "lines dropped ...]" in cut and "trace: step 20" not in cut
    assert cut.startswith("FAIL case 2") and cut.endswith("got ['a', 'b', 'c']")  # head and the error at the tail


def test_when_even_the_latest_reply_is_too_long_it_is_cut_too():
    out = compress(CONVERSATION, words, size([SYSTEM, GOAL]) + 12)
    assert size(out) <= size([SYSTEM, GOAL]) + 12
    assert out[:2] == [SYSTEM, GOAL]
    assert any(m.role == "assistant" for m in out)
    assert not any("earlier turn" in m.content for m in out)  # where room is scarce the note gives way


def test_a_goal_larger_than_the_budget_raises_naming_the_budget():
    with pytest.raises(TaskError, match="budget of 5 tokens"):
        compress(CONVERSATION, words, 5)


def test_reduce_reply_keeps_signatures_and_marked_decisions_only():
    text = "Plan: memoise.\nclass Cache:\n    def get(self, k):\n        return self.d[k]\nsome chatter"
    assert reduce_reply(text).splitlines()[1:] == ["Plan: memoise.", "class Cache:", "    def get(self, k):"]
    assert reduce_reply("just words") == "[earlier reply elided]"


def test_reduce_feedback_keeps_each_error_after_its_last_frame_once():
    assert reduce_feedback(OLD_LOG.content).splitlines()[1:] == [
        'File "solution.py", line 3, in parse', "return fields[5]", "IndexError: list index out of range"]
    assert reduce_feedback("FAIL a\nFAIL a\nok").splitlines()[1:] == ["FAIL a"]
    assert reduce_feedback("all good\n3 passed") == "[earlier feedback elided: no errors in it]"


def test_cut_middle_falls_back_to_characters_for_one_long_line():
    line = "x" * 1000

    def chars(text: str) -> int:
        return len(text)

    cut = cut_middle(line, chars, 100)
    assert len(cut) <= 100 and "characters dropped" in cut and cut.startswith("x") and cut.endswith("x")
    assert cut_middle(line, chars, 3) == ""  # not even the marker fits
