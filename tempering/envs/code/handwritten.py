"""`code/handwritten-v1`: 60 Python functions written by hand, for evaluation only.

`code/docstring-v1` trains on HumanEval's shape from templates: its `test` split is new
draws of the trained families and `unseen` is held-out families, but both keep the
generator's phrasings, naming styles, docstring layouts and input drawers. This set keeps
only the shape (a signature with hints, a docstring with examples, the body to write) and
changes everything inside it: each problem is a small task from some domain (calendars,
games, money, text layout, grids, paths), worded as a person would write it, with rules
spelled out in prose, bullet lists or Google/Sphinx-style sections, and none of the
generator's families or of HumanEval's 164 problems (tests/envs/test_code_handwritten.py
checks the names and docstrings against HumanEval's).

Each record of handwritten.json is in HumanEval's own format (task_id, prompt, entry_point,
canonical_solution, test), so one line of it works with `temper verify code`. The canonical
solution is the reference answer check_env and the tests score; the model never sees it.
Grading is code/humaneval-v1's: `check(candidate)` runs in the sandbox, pass or fail. So is
its feedback with `max_turns` above 1: a reply failing the docstring's own examples gets the
first failing one back and tries again (repair.py). Every canonical solution gives all its examples.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .humaneval import HumanEvalEnv
from .verify import CodeTask

ENV_ID = "code/handwritten-v1"
DATA = Path(__file__).with_name("handwritten.json")


@lru_cache(maxsize=1)
def load_handwritten() -> tuple[CodeTask, ...]:
    """Every problem, in file order."""
    return tuple(CodeTask.from_json(row) for row in json.loads(DATA.read_text())["problems"])


class HandwrittenCodeEnv(HumanEvalEnv):
    """As code/humaneval-v1: the prompt in its instruction, the hidden `check(candidate)` run
    in the sandbox, one answer unless `max_turns` asks for more. Its only split is `test`."""

    id = ENV_ID
    train_on = "code/docstring-v1"

    def problems(self) -> tuple[CodeTask, ...]:
        return load_handwritten()
