"""Final-answer extraction and numeric equivalence for math verifiers."""

from __future__ import annotations

import logging
import re

from math_verify import parse, verify

logging.getLogger("math_verify").setLevel(logging.ERROR)  # it warns on every call without a timeout

_BOXED = re.compile(r"\\boxed\{([^{}]*(?:\{[^{}]*\}[^{}]*)*)\}")
_NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")
MAX_ANSWER_CHARS = 100  # bound the text handed to sympy: parsing cost grows with it


def extract_answer(response: str) -> tuple[str | None, bool]:
    """(final answer text or None, whether the requested format was used).

    Order: the last \\boxed{...}; the text after the last "Answer:"; the last number.
    """
    boxed = _BOXED.findall(response)
    if boxed:
        return boxed[-1].strip()[:MAX_ANSWER_CHARS], True
    tagged = [m.group(1).strip() for m in re.finditer(r"Answer\s*:\s*([^\n]*)", response)]
    tagged = [t for t in tagged if _NUMBER.search(t)]
    if tagged:
        return _NUMBER.search(tagged[-1]).group(0).rstrip(","), True
    numbers = _NUMBER.findall(response)
    return (numbers[-1].rstrip(",")[:MAX_ANSWER_CHARS], False) if numbers else (None, False)


def numbers_equal(gold: str, answer: str) -> bool:
    """math-verify equivalence; parsing runs without its signal-based timeout (answers are short)."""
    answer = answer.replace(",", "") if re.fullmatch(r"-?\d{1,3}(,\d{3})+(\.\d+)?", answer) else answer
    try:
        return bool(verify(parse(gold, parsing_timeout=None), parse(answer, parsing_timeout=None), timeout_seconds=None))
    except Exception:  # math-verify raises on exotic input; an unparseable answer is wrong
        return False
