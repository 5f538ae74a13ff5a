"""`code/docstring-v1`: generated Python functions in HumanEval's shape, for training.

A prompt is what HumanEval gives: a signature with type hints and a docstring with 2-3
examples; the model writes the body (or the whole function in a fenced block), under
`code/humaneval-v1`'s own instruction. The families are pure functions over strings, lists,
numbers, small text formats and dicts, most of them 1-5 lines (text.py, seqs.py,
numeric.py, records.py); render.py turns one into a task.

Splits: `train` and `test` draw the trained families (FAMILY_NAMES) and the prompt's hash
decides which; `unseen` draws only UNSEEN_FAMILIES, one or two of each kind, which no train
or test task uses. The reward is the fraction of ten hidden cases passed.

One answer by default. With `max_turns` above 1 each reply first runs against the docstring's
2-3 examples (`metadata["visible"]`, the cases the docstring was written from), and a failing
one comes back naming the failing call, expected and got, or the error (repair.py); the
hidden cases score the last reply.
"""

from __future__ import annotations

import random

from ....types import Score, Task
from ...base import SingleTurnEnv
from ..envs import _broken, _check, _reference
from ..humaneval import INSTRUCTION
from ..mutants import mutants
from ..synth import family_generators
from ..repair import ExampleFeedback
from ..verify import CodeTask
from . import numeric, records, seqs, text
from .render import compile_reference, draw_cases, build

ENV_ID = "code/docstring-v1"
FAMILIES = text.FAMILIES + seqs.FAMILIES + numeric.FAMILIES + records.FAMILIES
KINDS = ("strings", "counting", "lists", "ordering", "numbers", "parsing", "dicts")
UNSEEN_FAMILIES = ("initials", "alternate_case", "count_peaks", "window_sums", "split_on", "rank_elements",
                   "lcm", "largest_arrangement", "hex_to_rgb", "csv_column", "positions_of")
"""Families only the unseen split draws: one or two of each kind, each beside trained
families of its kind, so `unseen` asks for the skill on a function never trained on."""
FAMILY_NAMES = tuple(f.name for f in FAMILIES if f.name not in UNSEEN_FAMILIES)
"""The families train and test draw."""
BY_NAME = {f.name: f for f in FAMILIES}
N_STRONG = 30
"""Inputs of the held-back check (`strong_verify`), drawn apart from the task's own."""


def strong_cases(code: CodeTask, by_name: dict = BY_NAME) -> list[dict]:
    """N_STRONG new cases of the task's family (looked up in `by_name`) and parameters, none of
    them the task's own."""
    ref = compile_reference(code.reference, code.entry_point)
    seen = {repr(c["args"]) for c in (*code.metadata["visible"], *(code.cases or ()))}
    family = by_name[code.metadata["family"]]
    return draw_cases(family, code.metadata["params"], ref, random.Random(f"strong|{code.prompt}"), N_STRONG, seen)


class DocstringEnv(ExampleFeedback, SingleTurnEnv):
    """`code/docstring-v1`: the reward is the fraction of hidden tests passed. One answer at
    max_turns=1 (the default); above, a reply failing the docstring's examples gets the first
    failing one back and another attempt, `turn_cost` off per extra attempt.

    Another env made of families in this shape (code/steps-v1) subclasses it and sets the four
    class attributes below to its own id, families and task builder."""

    concurrent_verify = True
    env_id = ENV_ID
    by_name = BY_NAME
    """Every family of the env, trained and held out, by name."""
    held_out = UNSEEN_FAMILIES
    """The families only the unseen split draws; train and test draw the others."""
    build = staticmethod(build)
    """(family, rng) -> CodeTask."""

    def __init__(self, max_turns: int = 1, turn_cost: float = 0.0) -> None:
        trained = tuple(name for name in self.by_name if name not in self.held_out)
        drawn, drawn_unseen = family_generators(self.by_name, trained, self.held_out, self.build, INSTRUCTION)
        super().__init__(self.env_id, drawn, _check, _reference, families=trained, unseen=drawn_unseen,
                         unseen_families=self.held_out)
        self._attempts(max_turns, turn_cost=turn_cost)

    def visible_cases(self, task: Task) -> list[dict]:
        return task.reference.metadata["visible"]

    def broken_response(self, task: Task) -> str:
        return _broken(task)

    def strong_verify(self, task: Task, response: str) -> Score:
        """The held-back check: the answer on N_STRONG new inputs."""
        return _check(task, response, cases=strong_cases(task.reference, self.by_name))

    def wrong_attempts(self, task: Task, rng) -> list[str]:
        """Plausible buggy versions of the reference (mutants.py), then the broken variant."""
        return [f"```python\n{m}```" for m in mutants(task.reference.reference, rng)] + [_broken(task)]
