"""Grading a final answer: `Answer: <number> <unit>` or `Answer: yes|no (<figure> <unit>)`.

Only the last `Answer:` line counts (markdown emphasis around it is fine); a reply without
one scores 0, since a reply about financial statements is full of other numbers. From that
line the first number is read, ignoring numbers glued to letters (FY2023). Commas group
thousands; a minus sign or parentheses around the number make it negative; currency
symbols are ignored.

A figure may also be written as the arithmetic that gives it, over the filing's figures:
`Answer: (5,230 - 4,810) / 4,810 * 100 %`. A run of numbers joined by + - * / and
parentheses is evaluated exactly (no Python eval: a parsed tree of those four operators and
numbers only), and the unit marks after it count as after a number. Reading the right figures
and combining them is the skill; the division itself is a calculator's job, as in math
verifiers that accept an exact expression for its value.

Units. The question states the unit it expects ("USD thousands", or "USD" alone for plain
dollars), whatever unit the filing's layout announces, and a bare number is read in that
unit. A scale word after the number (thousand/k, million/m/mn/mm, billion/bn/b, also
written "USD millions") converts: when the question asks for USD thousands, "12.5 million"
and "12,500" are the same answer, and "12,500 millions" is not. A "%" (or "percent") answers
only a percentage question and an "x" (or "times") only a ratio question; a scale word
or a currency code on a percentage or ratio, or a different currency code on an amount,
is `wrong_unit`. A number that would be right after rescaling (an amount by a power of
1,000, a percentage written as a fraction) is `wrong_scale`.

A number passes within the question's tolerance: |answer - gold| <= max(abs_tol,
rel_tol * |gold|). Yes/no questions score 1.0 for the right verdict citing the right
figure (compared by magnitude: a difference may be cited either way round), 0.5 (not
passed) for the right verdict with the figure missing, in the wrong unit or out of
tolerance, and 0 for the wrong verdict.

Feedback never gives the gold figure; on a wrong number at difficulty 1-2 it names the
statement and rows that hold the inputs, by the labels the filing prints.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass

from tempering.envs.finance.filing import SCALES
from tempering.envs.finance.questions import PERCENT, RATIO, STATEMENT_NAMES, Gold
from tempering.types import Score

PARTIAL_CREDIT = 0.5
"""A yes/no answer with the right verdict but not the right figure."""
CURRENCY_CODES = ("USD", "EUR", "GBP", "CAD", "CHF", "JPY", "AUD")
_ANSWER = re.compile(r"^[\s>*_#`-]*answer[*_`\s]*:(?P<text>.*)$", re.I | re.M)
_NUMBER = re.compile(r"(?<![A-Za-z\d.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)")
_SCALE_WORD = re.compile(r"\s*\)?\s*(?:[A-Za-z]{3}\s+)?(?P<word>thousands?|k|millions?|mn|mm|m|billions?|bn|b)\b", re.I)
_RESCALES = {False: (1e3, 1e-3, 1e6, 1e-6), True: (100,)}  # amounts; percentages (written as a fraction)
_EXPRESSION = re.compile(r"[-−(\s]*(?:\d|\.\d)[\d.,\s()+\-−*/]*")
"""Where an expression may run: numbers, the four operators, parentheses and spaces."""
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
MAX_EXPRESSION = 200
"""Characters; a longer run is read as its first number."""
_WORD_SCALES = {"k": "thousands", "thousand": "thousands", "m": "millions", "mn": "millions", "mm": "millions",
                "million": "millions", "b": "billions", "bn": "billions", "billion": "billions"}


@dataclass(frozen=True)
class Reading:
    """A number read off an answer, with the unit marks around it."""

    value: float
    scale: str | None
    """The scale word after the number (thousands, millions, billions), if any."""
    percent: bool
    ratio: bool
    currencies: tuple[str, ...]


def answer_text(response: str) -> str | None:
    """The text of the last non-empty `Answer:` line, or None."""
    texts = [m.group("text").strip(" *_`\t") for m in _ANSWER.finditer(response)]
    texts = [t for t in texts if t]
    return texts[-1] if texts else None


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return float(node.value)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _evaluate(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    raise ValueError("not arithmetic")


def read_expression(text: str) -> tuple[float, int, int] | None:
    """(value, start, end) of the first arithmetic expression in `text` with at least one
    binary operator, or None (a lone number, a malformed run, a division by zero)."""
    first = _NUMBER.search(text)
    if first is None:
        return None
    start = re.search(r"[-−(\s]*$", text[:first.start()]).start()  # a sign and opening parentheses before it
    run = _EXPRESSION.match(text, start).group(0).rstrip()
    while run.count(")") > run.count("(") and run.endswith(")"):  # a closing parenthesis of the text around it
        run = run[:-1].rstrip()
    source = re.sub(r"(\d),(?=\d{3}(?!\d))", r"\1", run.replace("−", "-"))
    if len(run) > MAX_EXPRESSION or not re.search(r"[\d.)]\s*[-+*/]\s*[-+(\d.]", source) or \
            re.search(r"[*/]{2}", source):
        return None
    try:
        tree = ast.parse(source.strip(), mode="eval")
        value = _evaluate(tree.body)
    except (SyntaxError, ValueError, ZeroDivisionError, RecursionError, MemoryError, OverflowError):
        return None
    return value, start, start + len(run)


def read_number(text: str) -> Reading | None:
    """The answer's figure: an arithmetic expression's value, else the first number."""
    expression = read_expression(text)
    if expression is not None:
        value, start, end = expression
        return _reading(value, text[:start], text[end:])
    m = _NUMBER.search(text)
    if m is None:
        return None
    before, after = text[:m.start()], text[m.end():]
    value = float(m.group(0).replace(",", ""))
    lead = r"\s*(?:[A-Za-z]{3}\s*)?[$€£¥]?\s*$"
    negative = re.search(r"[-−–]" + lead, before) or \
        (re.search(r"\(" + lead, before) and re.match(r"\s*(?:[A-Za-z]+\s*)?\)", after))
    return _reading(-value if negative else value, before, after)


def _reading(value: float, before: str, after: str) -> Reading:
    """The figure with the unit marks of the text around it."""
    scale = _SCALE_WORD.match(after)
    zone = re.split(r"[\d(]", after, maxsplit=1)[0]  # the unit marks: up to the next number or parenthesis
    return Reading(value=value,
                   scale=_WORD_SCALES[scale.group("word").lower().rstrip("s")] if scale else None,
                   percent=bool(re.search(r"%|\bper\s?cent|\bpct\b|\bpercentage point|\bpp\b", zone, re.I)),
                   ratio=bool(re.match(r"\s*[x×](?![A-Za-z])", after) or re.search(r"\btimes\b", zone, re.I)),
                   currencies=tuple(c for c in CURRENCY_CODES if re.search(rf"\b{c}\b", before + zone)))


def _in_unit(reading: Reading, gold: Gold) -> tuple[float | None, str]:
    """The reading in the gold's unit, or (None, why not)."""
    if gold.unit in (PERCENT, RATIO):
        other = reading.ratio if gold.unit == PERCENT else reading.percent
        if other or reading.scale or reading.currencies:
            return None, f"the question asks for {'a percentage' if gold.unit == PERCENT else 'a ratio (x)'}"
        return reading.value, ""
    currency, *scale = gold.unit.split()
    scale = scale[0] if scale else "ones"
    if reading.percent or reading.ratio:
        return None, f"the question asks for an amount in {gold.unit}"
    if reading.currencies and currency not in reading.currencies:
        return None, f"the question asks for an amount in {currency}, not {', '.join(reading.currencies)}"
    factor = SCALES[reading.scale] / SCALES[scale] if reading.scale else 1.0
    return reading.value * factor, ""


def _hint(gold: Gold, labels: Mapping[str, str]) -> str:
    where = " and the ".join(STATEMENT_NAMES[s] for s in gold.sources)
    rows = "; ".join(labels[r] for r in gold.rows)
    return f" The inputs are in the {where}" + (f" (rows: {rows})." if rows else ".")


def score_answer(gold: Gold, response: str, hint: Mapping[str, str] | None = None) -> Score:
    """Grade a reply against the gold answer; `hint` (the filing's line-item labels) adds
    where the inputs are to feedback on a wrong number."""
    text = answer_text(response)
    fmt = (f"`Answer: <number> {gold.unit}`" if gold.verdict is None
           else f"`Answer: yes (<figure> {gold.unit})` or `Answer: no (<figure> {gold.unit})`")
    base = {"expected_unit": gold.unit, "tolerance": gold.tolerance_text}
    if text is None:
        return Score(0.0, False, {**base, "status": "no_answer", "extracted": None, "feedback":
                                  f"I could not find your final answer. End your reply with one line {fmt}."})
    if gold.verdict is None:
        return _score_number(gold, text, fmt, hint, base)
    return _score_verdict(gold, text, fmt, base)


def _score_number(gold: Gold, text: str, fmt: str, hint: Mapping[str, str] | None, base: dict) -> Score:
    reading = read_number(text)
    if reading is None:
        return Score(0.0, False, {**base, "status": "no_answer", "extracted": None,
                                  "feedback": f"Your Answer line has no number. End your reply with one line {fmt}."})
    value, why = _in_unit(reading, gold)
    if value is None:
        return Score(0.0, False, {**base, "status": "wrong_unit", "extracted": reading.value,
                                  "feedback": f"Your answer is in the wrong unit: {why}. Answer as {fmt}."})
    if gold.within(value):
        return Score(1.0, True, {**base, "status": "correct", "extracted": value, "feedback": ""})
    if gold.unit != RATIO and any(gold.within(value * k) for k in _RESCALES[gold.unit == PERCENT]):
        scales = "a percentage, not a fraction" if gold.unit == PERCENT else "thousands, millions, billions"
        return Score(0.0, False, {**base, "status": "wrong_scale", "extracted": value, "feedback":
                                  f"Your figure is not in the unit asked for ({gold.unit}): check the scale of the "
                                  f"tables and of your answer ({scales})."})
    shown = f"{value:,.4f}".rstrip("0").rstrip(".")
    note = f"{shown} {gold.unit} is outside the tolerance ({gold.tolerance_text}) of the correct figure."
    return Score(0.0, False, {**base, "status": "wrong_number", "extracted": value,
                              "feedback": note + (_hint(gold, hint) if hint else "") + " Recheck the figures and your "
                                                                                "arithmetic."})


def _score_verdict(gold: Gold, text: str, fmt: str, base: dict) -> Score:
    m = re.match(r"(yes|no)\b[\s,:;.-]*(.*)$", text, re.I)
    if m is None:
        return Score(0.0, False, {**base, "status": "no_answer", "extracted": None, "verdict": None,
                                  "feedback": f"Your Answer line does not start with yes or no. Answer as {fmt}."})
    verdict, rest = m.group(1).lower() == "yes", m.group(2).strip()
    details = {**base, "verdict": verdict}
    if verdict != gold.verdict:
        return Score(0.0, False, {**details, "status": "wrong_verdict", "extracted": None,
                                  "feedback": "Your answer is not correct. Recompute the figure from the statements "
                                              "and notes and check your conclusion against it."})
    if rest.startswith("(") and rest.endswith(")"):
        rest = rest[1:-1]  # the citation's parentheses do not make the figure negative
    reading = read_number(rest)
    value, why = _in_unit(reading, gold) if reading else (None, "")
    if reading is None or value is None:
        status = "missing_figure" if reading is None else "wrong_unit"
        problem = "does not cite the figure" if reading is None else f"cites the figure in the wrong unit ({why})"
        return Score(PARTIAL_CREDIT, False, {**details, "status": status, "extracted": None if reading is None
                                             else reading.value,
                                             "feedback": f"Your conclusion is right but your answer {problem}. "
                                                         f"Answer as {fmt}."})
    if not gold.within(abs(value)):
        return Score(PARTIAL_CREDIT, False, {**details, "status": "wrong_figure", "extracted": value, "feedback":
                                             f"Your conclusion is right but the cited figure is outside the tolerance "
                                             f"({gold.tolerance_text}) of the correct one."})
    return Score(1.0, True, {**details, "status": "correct", "extracted": value, "feedback": ""})
