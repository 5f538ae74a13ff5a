"""The code environments built on `synth.py`: `code/synth-v1` (one answer, scored on the
hidden tests) and `code/repair-v1` (write, run against the visible examples, read the
failure, fix, resubmit; the hidden tests give the final reward).

Both have three splits: `train` and `test` draw the trained families (synth.FAMILY_NAMES,
split by the prompt's hash), `unseen` only the held-out ones (synth.UNSEEN_FAMILIES)."""

from __future__ import annotations

from ...types import Score, Task
from ..base import SingleTurnEnv
from .mutants import mutants
from .humaneval import _BREAK
from .repair import Attempts, check_code, feedback  # noqa: F401  (feedback: its old home)
from .synth import ENV_ID as SYNTH_ID, FAMILY_NAMES, UNSEEN_FAMILIES, generate, generate_unseen, strong_cases
from .verify import CodeTask

REPAIR_ID = "code/repair-v1"


def _check(task: Task, response: str, cases=None) -> Score:
    """The hidden tests' score of `response` (or, given `cases`, its score on them)."""
    return check_code(task, response, cases)


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


class RepairEnv(Attempts, SynthEnv):
    """`code/repair-v1`: up to `max_turns` attempts. Each attempt runs against the three
    examples shown in the prompt; a failure comes back as the next user message. The
    episode ends when the examples pass or the attempts run out; the reward is then the
    hidden tests' score (binary or fraction) minus `turn_cost` per extra attempt (repair.py).
    Its feedback names the failing example by index (`case 0: ...`), as it was trained on."""

    def __init__(self, max_turns: int = 3, reward: str = "fraction", turn_cost: float = 0.0) -> None:
        super().__init__()
        self.id = REPAIR_ID
        self._attempts(max_turns, reward, turn_cost)

    def visible_cases(self, task: Task) -> list[dict]:
        return task.reference.metadata["visible"]
