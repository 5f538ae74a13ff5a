"""Write, run against the examples, read the failure, fix: the attempt loop the code envs share.

    Attempts         up to `max_turns` replies. Each runs against the examples the prompt
                     shows (`visible_cases`); a failure comes back as the next user message
                     (`feedback`); the episode ends when the examples pass or the attempts run
                     out, and the hidden tests score the last reply. code/repair-v1.
    ExampleFeedback  Attempts for the HumanEval-shaped envs (code/docstring-v1,
                     code/handwritten-v1, code/humaneval-v1): with max_turns=1 (their default)
                     an episode is one answer scored on the hidden tests, exactly the
                     single-turn env; the feedback names the failing example by its call.

The feedback is built from the run against the visible examples only, so it can name nothing
the prompt does not already show: the hidden tests are never run before the last reply, and
their verdict goes to `info["hidden"]`, which the model never sees.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Sequence

from ...errors import TaskError
from ...types import Message, Score, StepResult, Task
from ..base import OneAnswer
from ..context import compress
from .examples import call_text
from .extract import extract_code
from .verify import CodeTask, verify_code

REWARDS = ("binary", "fraction")


def check_code(task: Task, response: str, cases=None, sandbox=None) -> Score:
    """`response` scored on the task's hidden tests, or on `cases` instead (the examples the
    prompt shows), in `sandbox` (the process-wide one when None)."""
    code: CodeTask = task.reference
    if not response.strip():
        return Score(0.0, False, {"status": "empty"})
    if cases is not None:
        code = replace(code, cases=tuple(cases))
    if sandbox is None:
        from ...sandbox import shared_sandbox

        sandbox = shared_sandbox()
    return verify_code(code, extract_code(response, code.prompt, code.entry_point), sandbox)


def feedback(score: Score, turn: int, max_turns: int, calls: Sequence[str] = ()) -> str:
    """What a failed attempt tells the model: the first failing example, or the error's
    last lines; never the hidden tests. With `calls` (the examples' calls, in the order they
    were run) the example is named by its call, e.g. `add(2, 3): expected 5, got 4`; without,
    by its index (`case 0: ...`)."""
    d = score.details
    lines = []
    if d.get("status") == "load_error":
        err = d["failures"][0]["error"] if d.get("failures") else d.get("candidate_stderr", "")
        tail = [line for line in err.splitlines() if line.strip()][-4:]
        lines.append("Your code did not run:\n" + "\n".join(tail))
    elif d.get("failures"):
        f = d["failures"][0]
        lines.append(f"Your code failed an example ({d.get('checks_passed', 0)} of {d.get('checks_total', 0)} passed):")
        error = f.get("error", "")
        lines.append(_named(error, f.get("case"), calls))
        # where it failed: the traceback's last code lines (its final line, the error, is above)
        tb = [line for line in d.get("candidate_stderr", "").splitlines() if line.strip()][-3:-1]
        if tb and "AssertionError" not in error:
            lines.append("\n".join(tb))
    else:
        lines.append(f"Your code did not pass the examples ({d.get('status')}: {d.get('sandbox_detail', '')}).")
    lines.append(f"Fix the function and reply with the whole corrected function in one ```python code block "
                 f"(attempt {turn + 1} of {max_turns}).")
    return "\n".join(lines)


def _named(error: str, case: int | None, calls: Sequence[str]) -> str:
    """The harness's error line, with the example's call in place of `case N` when known."""
    if case is None or not 0 <= case < len(calls):
        return error.replace("CandidateError: ", "")
    mismatch = f"AssertionError: case {case}: "
    if error.startswith(mismatch):
        return f"{calls[case]}: {error[len(mismatch):]}"
    return f"{calls[case]}: {error.replace('CandidateError: ', '')}"


class Attempts:
    """reset/step for a code env of up to `max_turns` attempts (see the module docstring).
    The env supplies `verify` (the hidden tests), `visible_cases` and `_task` (OneAnswer's).
    The reward is the hidden tests' score (binary or fraction) minus `turn_cost` per extra attempt."""

    id: str
    _task: Task | None
    max_turns: int = 1
    reward: str = "fraction"
    turn_cost: float = 0.0
    name_examples = False
    """Whether feedback names the failing example by its call (else by its index)."""

    def _attempts(self, max_turns: int, reward: str = "fraction", turn_cost: float = 0.0) -> None:
        if reward not in REWARDS:
            raise TaskError(f"unknown reward {reward!r} for {self.id}: use one of {', '.join(REWARDS)}")
        if max_turns < 1:
            raise TaskError(f"max_turns must be at least 1, got {max_turns}")
        if turn_cost < 0:
            raise TaskError(f"turn_cost must be >= 0, got {turn_cost}")
        self.max_turns, self.reward, self.turn_cost = max_turns, reward, turn_cost
        self._turn = 0
        self._history: list[Message] = []

    def visible_cases(self, task: Task) -> list[dict]:
        """The examples the prompt shows, as cases ({"args", "expected"}); empty when it shows none."""
        raise NotImplementedError

    def check_examples(self, task: Task, action: str, cases: list[dict]) -> Score:
        """The reply run against the visible examples."""
        return check_code(task, action, cases)

    def reset(self, task: Task) -> list[Message]:
        self._turn = 0
        self._history = super().reset(task)
        return list(self._history)

    def context_messages(self, count_tokens, budget: int) -> list[Message]:
        """The conversation so far in at most `budget` tokens: the task, the latest code and
        error in full, earlier attempts cut to their signatures and error lines."""
        return compress(self._history, count_tokens, budget)

    def step(self, action: str) -> StepResult:
        if self._task is None:
            raise TaskError(f"env {self.id}: call reset(task) before step(action)")
        task = self._task
        cases = self.visible_cases(task)
        visible = self.check_examples(task, action, cases) if cases else None  # none shown: nothing to run
        self._turn += 1
        d = visible.details if visible is not None else {}
        # status and progress (share of the examples passed) feed the rollout watchdogs
        info = {"turn": self._turn, "code": action, "visible": d, "status": d.get("status"),
                "progress": d.get("checks_passed", 0) / max(1, d.get("checks_total", 0))}
        if visible is not None and not visible.passed and self._turn < self.max_turns:
            calls = [call_text(task.reference.entry_point, c) for c in cases] if self.name_examples else ()
            msg = Message("user", feedback(visible, self._turn, self.max_turns, calls))
            self._history += [Message("assistant", action), msg]
            return StepResult((msg,), 0.0, False, False, {**info, "passed": False})
        hidden = self.verify(task, action)
        value = hidden.value if self.reward == "fraction" else float(hidden.passed)
        self._task = None
        # the episode's status is the final verdict's (hidden tests), not the visible examples'
        return StepResult((), value - self.turn_cost * (self._turn - 1), True, False,
                          {**info, "status": hidden.details.get("status"), "visible_status": d.get("status"),
                           "passed": hidden.passed, "hidden": hidden.details})


class ExampleFeedback(Attempts):
    """Attempts for an env that is single-turn by default: at max_turns=1 a step is
    OneAnswer's (one answer, the hidden tests' score, their details as info), and a
    one-reply evaluation of it is the single-answer one (`turns_optional`)."""

    name_examples = True
    turns_optional = True
    """Single-turn at max_turns=1: evaluations measure one reply as a single answer (protocols.episodic)."""

    def step(self, action: str) -> StepResult:
        if self.max_turns == 1:
            return OneAnswer.step(self, action)
        return super().step(action)
