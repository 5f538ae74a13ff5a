"""The finance environments.

    finance/statements-v1      the filing excerpt (statements, MD&A, notes) is in the prompt;
                               answer, read the verdict, try again (max_turns, default 3)
    finance/filings-long-v1    the filing is a long report the prompt only lists the contents
                               of; the model reads it with search / read_section tool calls
                               and then answers (max_turns, default 6)

Both take `difficulty` (1-5: the highest family level drawn; the long report also grows
with each task's level), `max_turns` and `turn_cost` (see FeedbackEnv).

Splits: train and test draw their filings' layouts from the training layouts; `unseen`
draws only the held-out ones (layout.py: UNSEEN_LAYOUTS), so it measures reading a table
style and line-item names training never showed. Every task's metadata names its layout
("style/naming/order").
"""

from __future__ import annotations

import random
import re
from dataclasses import replace
from typing import Callable

from tempering.envs.feedback import FeedbackEnv
from tempering.envs.finance.document import (PAGE_CHARS, SEARCH_RESULTS, Document, build_document, outline,
                                             source_sections, target_chars)
from tempering.envs.finance.layout import Layout, train_layout, unseen_layout
from tempering.envs.finance.questions import FAMILIES, PERCENT, RATIO, Case, Gold
from tempering.envs.finance.render import (INSTRUCTION, answer_format, attachments, company_intro, statements_prompt,
                                           unit_label)
from tempering.envs.finance.verify import score_answer
from tempering.errors import TaskError
from tempering.types import Message, Score, Task

STATEMENTS_ID = "finance/statements-v1"
FILINGS_ID = "finance/filings-long-v1"
_TOOL_LINE = re.compile(r"(search|read_section)\s*\((.*)\)\s*;?")


def _families(difficulty: int) -> tuple[str, ...]:
    if not 1 <= difficulty <= 5:
        raise TaskError(f"difficulty must be 1-5, got {difficulty}")
    return tuple(name for name, (level, _) in FAMILIES.items() if level <= difficulty)


Layouts = Callable[[random.Random], Layout]
"""Draws a filing's layout: train_layout (train and test) or unseen_layout."""


def _draw(rng: random.Random, family: str | None, families: tuple[str, ...], layouts: Layouts
          ) -> tuple[str, int, Case]:
    family = family or rng.choice(families)
    level, make = FAMILIES[family]
    filing, gold = make(rng)
    return family, level, Case(replace(filing, layout=layouts(rng)), gold)


def _metadata(family: str, level: int, case: Case) -> dict:
    gold = case.gold
    return {"family": family, "difficulty": level, "kind": "number" if gold.verdict is None else "yes_no",
            "unit": gold.unit, "tolerance": {"rel": gold.rel_tol, "abs": gold.abs_tol},
            "layout": case.filing.layout.name, "attachments": attachments(case.filing)}


def verify(task: Task, response: str) -> Score:
    labels = task.reference.filing.layout.labels if task.metadata["difficulty"] <= 2 else None
    return score_answer(task.reference.gold, response, hint=labels)


def _figure(value: float, unit: str) -> str:
    if unit in (PERCENT, RATIO):
        return f"{value:.2f}"
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.4f}".rstrip("0")


def answer_line(gold: Gold, value: float, verdict: bool | None = None) -> str:
    """`Answer: ...` as the prompt asks for it."""
    if gold.verdict is None:
        return f"Answer: {_figure(value, gold.unit)} {gold.unit}"
    return f"Answer: {'yes' if verdict else 'no'} ({_figure(value, gold.unit)} {gold.unit})"


def reference_response(task: Task) -> str:
    gold = task.reference.gold
    return answer_line(gold, gold.value, gold.verdict)


def worked_response(task: Task) -> str:
    """The reference written as the arithmetic over the filing's figures that gives it
    (`Answer: (5,230 - 4,810) / 4,810 * 100 %`); a lookup or a yes/no answer as the reference."""
    gold = task.reference.gold
    if gold.formula is None or gold.verdict is not None:
        return reference_response(task)
    return f"Answer: {gold.formula} {gold.unit}"


def broken_response(task: Task) -> str:
    """A plausible mistake: the family's tempting wrong figure, or the opposite verdict."""
    gold = task.reference.gold
    if gold.verdict is not None:
        return answer_line(gold, gold.value, not gold.verdict)
    line = answer_line(gold, gold.wrong) if gold.wrong is not None else ""
    if not line or score_answer(gold, line).passed:  # the mistake is too close to the truth to tell apart
        line = answer_line(gold, gold.value * 1.2 + 1)
    return line


def _statements_task(rng: random.Random, family: str | None, families: tuple[str, ...], layouts: Layouts) -> Task:
    family, level, case = _draw(rng, family, families, layouts)
    prompt = statements_prompt(case.filing, case.gold, level)
    return Task("", "finance", (Message("user", prompt),), case, _metadata(family, level, case))


class StatementsEnv(FeedbackEnv):
    """`finance/statements-v1`: questions on a filing excerpt shown whole in the prompt."""

    def __init__(self, difficulty: int = 5, max_turns: int = 3, turn_cost: float = 0.0) -> None:
        families = _families(difficulty)
        super().__init__(STATEMENTS_ID, lambda rng, family: _statements_task(rng, family, families, train_layout),
                         verify, reference_response, families, max_turns, turn_cost,
                         unseen=lambda rng, family: _statements_task(rng, family, families, unseen_layout))

    def broken_response(self, task: Task) -> str:
        return broken_response(task)

    def worked_response(self, task: Task) -> str:
        return worked_response(task)


TOOL_HELP = ("To use a tool, end your reply with exactly one tool call on its own line:\n"
             f"- `search(\"words\")` lists the {SEARCH_RESULTS} sections that best match the words, with their best "
             f"matching lines\n"
             f"- `read_section(\"id\")` shows a section, {PAGE_CHARS:,} characters a page; `read_section(\"id\", 2)` "
             f"shows its page 2\n"
             f"The tool's output comes back as the next message, ending with the number of your next reply and the "
             f"limit. Every reply counts, and your last allowed reply is graded as an answer.")


def long_prompt(case: Case, level: int) -> str:
    f, gold = case.filing, case.gold
    toc = "\n".join(f"- `{sid}` {title}" for sid, title in outline(case))
    return (f"You are reviewing {company_intro(f)}. Its financial statements are presented {unit_label(f)}. The "
            f"report runs to more than {target_chars(level):,} characters, too long to show here, so you get its "
            f"table of contents and two tools to read it.\n\n"
            f"Table of contents (section ids in backticks):\n{toc}\n\n{TOOL_HELP}\n\n"
            f"### Question\n{gold.question}\n\n{INSTRUCTION} {answer_format(gold)}")


def parse_tool_call(reply: str) -> tuple[str, str] | None:
    """(tool name, argument text) when the reply's last line is a tool call, else None.
    Code-fence lines and backticks around the call are ignored."""
    lines = [ln.strip() for ln in reply.splitlines()]
    lines = [ln for ln in lines if ln and not re.fullmatch(r"```\w*", ln)]
    m = _TOOL_LINE.fullmatch(lines[-1].strip("`").strip()) if lines else None
    return (m.group(1), m.group(2).strip()) if m else None


def _filings_task(rng: random.Random, family: str | None, families: tuple[str, ...], layouts: Layouts) -> Task:
    family, level, case = _draw(rng, family, families, layouts)
    metadata = {**_metadata(family, level, case), "sections": source_sections(case)}
    return Task("", "finance", (Message("user", long_prompt(case, level)),), case, metadata)


class FilingsEnv(FeedbackEnv):
    """`finance/filings-long-v1`: the same questions on a report far longer than the
    context, read through tool calls."""

    def __init__(self, difficulty: int = 5, max_turns: int = 6, turn_cost: float = 0.0) -> None:
        families = _families(difficulty)
        super().__init__(FILINGS_ID, lambda rng, family: _filings_task(rng, family, families, train_layout), verify,
                         reference_response, families, max_turns, turn_cost,
                         unseen=lambda rng, family: _filings_task(rng, family, families, unseen_layout))
        self._document: tuple[Case, Document] | None = None

    def broken_response(self, task: Task) -> str:
        return broken_response(task)

    def worked_response(self, task: Task) -> str:
        return worked_response(task)

    def tool_demonstration(self, task: Task) -> list[str]:
        """The reads a careful analyst makes before answering: each section that holds a
        figure the question needs, then the answer (tempering.trainer.demos plays them for the
        tool's real output)."""
        return [f"The figures are in `{sid}`; reading it.\nread_section(\"{sid}\")" for sid in task.metadata["sections"]] + [
            reference_response(task)]

    def document(self, task: Task) -> Document:
        """The task's report (the last one built is kept: an episode reads one report)."""
        if self._document is None or self._document[0] is not task.reference:
            self._document = (task.reference, build_document(task.reference, task.metadata["difficulty"]))
        return self._document[1]

    def tool(self, task: Task, action: str) -> str | None:
        call = parse_tool_call(action)
        if call is None:
            return None
        return f"{self._run_tool(task, *call)}\n(reply {self._turn + 1} of {self.max_turns})"

    def _run_tool(self, task: Task, name: str, args: str) -> str:
        if name == "search":
            m = re.fullmatch(r"([\"'])(.*)\1", args, re.S)
            if m is None:
                return 'Tool error: write the query in quotes, e.g. search("restated revenue").'
            return self.document(task).search(m.group(2))
        m = re.fullmatch(r"([\"']?)([\w.-]+)\1\s*(?:,\s*(?:page\s*=\s*)?(\d+))?", args)
        if m is None:
            return 'Tool error: write read_section("<section id>") or read_section("<section id>", <page>).'
        return self.document(task).read(m.group(2), int(m.group(3) or 1))
