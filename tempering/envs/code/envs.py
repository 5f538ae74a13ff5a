"""The code environments built on `synth.py`: `code/synth-v1` (one answer, scored on the
hidden tests) and `code/repair-v1` (write, run against the visible examples, read the
failure, fix, resubmit; the hidden tests give the final reward).

Both have three splits: `train` and `test` draw the trained families (synth.FAMILY_NAMES,
split by the prompt's hash), `unseen` only the held-out ones (synth.UNSEEN_FAMILIES)."""

from __future__ import annotations

from dataclasses import replace

from ...errors import TaskError
from ..context import compress
from ...types import Message, Score, StepResult, Task
from ..base import SingleTurnEnv
from .extract import extract_code
from .mutants import mutants
from .humaneval import _BREAK
from .synth import ENV_ID as SYNTH_ID, FAMILY_NAMES, UNSEEN_FAMILIES, generate, generate_unseen, strong_cases
from .verify import CodeTask, verify_code

REPAIR_ID = "code/repair-v1"
REWARDS = ("binary", "fraction")


def _sandbox():
    from ...sandbox import shared_sandbox

    return shared_sandbox()


def _check(task: Task, response: str, cases=None) -> Score:
    code: CodeTask = task.reference
    if not response.strip():
        return Score(0.0, False, {"status": "empty"})
    if cases is not None:
        code = replace(code, cases=tuple(cases))
    return verify_code(code, extract_code(response, code.prompt, code.entry_point), _sandbox())


def _reference(task: Task) -> str:
    return f"```python\n{task.reference.reference}```"


def _broken(task: Task) -> str:
    code: CodeTask = task.reference
    return f"```python\n{code.reference}{_BREAK.replace('{name}', code.entry_point)}```"


class SynthEnv(SingleTurnEnv):
    """`code/synth-v1`: the reward is the fraction of hidden tests passed."""

    concurrent_verify = True

    def __init__(self) -> None:
        super().__init__(SYNTH_ID, generate, _check, _reference, families=FAMILY_NAMES, unseen=generate_unseen,
                         unseen_families=UNSEEN_FAMILIES)

    def broken_response(self, task: Task) -> str:
        return _broken(task)

    def strong_verify(self, task: Task, response: str) -> Score:
        """The held-back check: the answer on N_STRONG new inputs (synth.strong_cases)."""
        return _check(task, response, cases=strong_cases(task.reference))

    def wrong_attempts(self, task: Task, rng) -> list[str]:
        """Plausible buggy versions of the reference (one change each; mutants.py), then the
        broken variant: first attempts for repair demonstrations."""
        return [f"```python\n{m}```" for m in mutants(task.reference.reference, rng)] + [_broken(task)]


def feedback(score: Score, turn: int, max_turns: int) -> str:
    """What a failed attempt tells the model: the first failing example, or the error's
    last lines; never the hidden tests."""
    d = score.details
    lines = []
    if d.get("status") == "load_error":
        err = d["failures"][0]["error"] if d.get("failures") else d.get("candidate_stderr", "")
        tail = [line for line in err.splitlines() if line.strip()][-4:]
        lines.append("Your code did not run:\n" + "\n".join(tail))
    elif d.get("failures"):
        f = d["failures"][0]
        lines.append(f"Your code failed an example ({d.get('checks_passed', 0)} of {d.get('checks_total', 0)} passed):")
        lines.append(f.get("error", "").replace("CandidateError: ", ""))
        error = f.get("error", "")
        # where it failed: the traceback's last code lines (its final line, the error, is above)
        tb = [line for line in d.get("candidate_stderr", "").splitlines() if line.strip()][-3:-1]
        if tb and "AssertionError" not in error:
            lines.append("\n".join(tb))
    else:
        lines.append(f"Your code did not pass the examples ({d.get('status')}: {d.get('sandbox_detail', '')}).")
    lines.append(f"Fix the function and reply with the whole corrected function in one ```python code block "
                 f"(attempt {turn + 1} of {max_turns}).")
    return "\n".join(lines)


class RepairEnv(SynthEnv):
    """`code/repair-v1`: up to `max_turns` attempts. Each attempt runs against the three
    examples shown in the prompt; a failure comes back as the next user message. The
    episode ends when the examples pass or the attempts run out; the reward is then the
    hidden tests' score (binary or fraction) minus `turn_cost` per extra attempt."""

    def __init__(self, max_turns: int = 3, reward: str = "fraction", turn_cost: float = 0.0) -> None:
        if reward not in REWARDS:
            raise TaskError(f"unknown reward {reward!r} for {REPAIR_ID}: use one of {', '.join(REWARDS)}")
        if max_turns < 1:
            raise TaskError(f"max_turns must be at least 1, got {max_turns}")
        super().__init__()
        self.id = REPAIR_ID
        self.max_turns, self.reward, self.turn_cost = max_turns, reward, turn_cost
        self._turn = 0

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
        visible = _check(task, action, cases=task.reference.metadata["visible"])
        self._turn += 1
        d = visible.details
        # status and progress (share of the examples passed) feed the rollout watchdogs
        info = {"turn": self._turn, "code": action, "visible": d, "status": d.get("status"),
                "progress": d.get("checks_passed", 0) / max(1, d.get("checks_total", 0))}
        if not visible.passed and self._turn < self.max_turns:
            msg = Message("user", feedback(visible, self._turn, self.max_turns))
            self._history += [Message("assistant", action), msg]
            return StepResult((msg,), 0.0, False, False, {**info, "passed": False})
        hidden = self.verify(task, action)
        value = hidden.value if self.reward == "fraction" else float(hidden.passed)
        self._task = None
        # the episode's status is the final verdict's (hidden tests), not the visible examples'
        return StepResult((), value - self.turn_cost * (self._turn - 1), True, False,
                          {**info, "status": hidden.details.get("status"), "visible_status": d.get("status"),
                           "passed": hidden.passed, "hidden": hidden.details})
