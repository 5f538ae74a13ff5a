"""`code/steps-v1`: generated Python functions in HumanEval's shape whose bodies take several steps.

The prompt, the grading, the feedback between attempts and the held-back check are
`code/docstring-v1`'s (env.py, render.py); only the families differ. Those of docstring-v1
are mostly one-line bodies; these (steps.py) are loops with state, stacks, grids, small
simulations and parsing with branches, 4 to 12 lines each, the length of HumanEval's and
`code/handwritten-v1`'s solutions.

Splits: `train` and `test` draw the trained families and the prompt's hash decides which;
`unseen` draws only UNSEEN_FAMILIES, one per kind, which no train or test task uses.

One rule more than docstring-v1: the ten hidden cases of a task never all have the same
answer, so a function returning a constant cannot pass one (`build_varied`).
"""

from __future__ import annotations

import random

from ..verify import CodeTask
from .env import DocstringEnv
from .family import Family
from .render import build
from .steps import FAMILIES, KINDS

ENV_ID = "code/steps-v1"
UNSEEN_FAMILIES = ("balance_index", "current_page", "path_sum", "game_winner", "duration_seconds")
"""Held out, one per kind (scans, stacks, grids, simulation, text_rules), each beside trained
families that need the same skill: a running sum, a pair of stacks, moves on a grid, rules
of a game, digit runs followed by a letter."""
FAMILY_NAMES = tuple(f.name for f in FAMILIES if f.name not in UNSEEN_FAMILIES)
BY_NAME = {f.name: f for f in FAMILIES}
TRIES = 50
"""Draws of a task before `build_varied` gives up on a family (none comes near: see the tests)."""

__all__ = ["BY_NAME", "ENV_ID", "FAMILIES", "FAMILY_NAMES", "KINDS", "UNSEEN_FAMILIES", "StepsEnv", "build_varied"]


def build_varied(family: Family, rng: random.Random) -> CodeTask:
    """render.build, drawn again from the same rng until the hidden answers are not all equal."""
    for _ in range(TRIES):
        code = build(family, rng)
        if len({repr(c["expected"]) for c in code.cases}) > 1:
            return code
    raise ValueError(f"family {family.name} gave the same answer to every hidden case in {TRIES} draws")


class StepsEnv(DocstringEnv):
    """`code/steps-v1`: `code/docstring-v1` over the multi-step families. The reward is the
    fraction of hidden tests passed; `max_turns` above 1 gives feedback on the docstring's
    examples between attempts, as there."""

    env_id = ENV_ID
    by_name = BY_NAME
    held_out = UNSEEN_FAMILIES
    build = staticmethod(build_varied)
