"""Infrastructure failures: an attempt the sandbox could not carry out is never a reward.

What counts as one (and only this, tested by `is_infra_failure`):

    a sandboxed run whose ExecResult.status is sandbox_error (the fork server died, a remote
    replica was lost, a connection was refused), as the verifier reports it: the record's
    status, or its details' (info's) status or sandbox_status, is sandbox_error
    an env step or verification that raised SandboxUnavailable (turned into such a record)

A timeout, a memory kill or a crash of the model's own code is the model's failure, not one of these.

`InfraRetry(env, retries)` re-runs a verification or env step of the same reply (the model's
tokens are not sampled again) up to `retries` more times while its sandbox fails; the
rollout backends and the evaluations run every env call through it. An attempt still failing
after that ends with stop_reason INFRA_STOP, and the trainer leaves it out of its group's
statistics and out of the loss (trainer/group.py).
"""

from __future__ import annotations

import copy
from dataclasses import replace
from typing import Any

from tempering.errors import SandboxUnavailable
from tempering.types import Score, StepResult, Task

INFRA_STATUS = "sandbox_error"
"""The status word of a run the sandbox itself failed (ExecResult.status)."""
INFRA_STOP = "infra"
"""The stop_reason of an attempt the infrastructure ended: its reward means nothing."""


def is_infra_failure(record: Any) -> bool:
    """Whether the sandbox, not the model, failed this attempt: a Score, StepResult, Turn
    (or a verifier's details / an env's info dict) whose status, or whose details' status or
    sandbox_status, is sandbox_error; a Turn the rollout already flagged (infra_failed). A
    passing record never is: a pass needs a sandbox that worked.

    >>> is_infra_failure(Score(0.0, False, {"status": "sandbox_error"}))
    True
    >>> is_infra_failure(Score(0.0, False, {"status": "timeout", "sandbox_status": "timeout"}))
    False
    """
    if record is None:
        return False
    if isinstance(record, dict):
        details = record
        flagged, status, passed = record.get("infra_failed"), record.get("status"), record.get("passed")
    else:
        details = getattr(record, "details", None) or getattr(record, "info", None) or {}
        flagged, status, passed = getattr(record, "infra_failed", None), getattr(record, "status", None), \
            getattr(record, "passed", None)
    if flagged is True:
        return True
    if passed is True:
        return False
    return INFRA_STATUS in (status, details.get("status"), details.get("sandbox_status"))


def _unavailable(exc: SandboxUnavailable) -> dict:
    return {"status": INFRA_STATUS, "error": f"SandboxUnavailable: {exc}"}


class InfraRetry:
    """`env` with its verify and step re-run, up to `retries` more times, while the sandbox
    fails (is_infra_failure, or SandboxUnavailable raised). The Score or StepResult returned
    is the last try's, with `infra_retries` set to the re-runs it took; after the last try,
    SandboxUnavailable comes back as an infra-failed record rather than an exception.

    A failed step may have left the env's state half-changed (a turn counted, a sandbox session
    lost), so a step is retried from the state before it: the env is reset to the episode's
    task and its earlier replies are stepped again, then the failed reply is."""

    def __init__(self, env, retries: int) -> None:
        self.env, self.retries = env, retries
        self._task: Task | None = None
        self._actions: list[str] = []  # the episode's replies so far, to rebuild its state from

    def __getattr__(self, name):
        if name == "env":  # not set yet (a copy or unpickling under way): no endless lookup through it
            raise AttributeError(name)
        return getattr(self.env, name)

    def __copy__(self) -> "InfraRetry":
        # One env per episode (an env holds its episode's state): the copy wraps a copy.
        return InfraRetry(copy.copy(self.env), self.retries)

    def verify(self, task: Task, response: str) -> Score:
        for tries in range(max(0, self.retries) + 1):
            try:
                score = self.env.verify(task, response)
            except SandboxUnavailable as e:
                score = Score(0.0, False, _unavailable(e))
            if not is_infra_failure(score):
                break
        return replace(score, infra_retries=tries)

    def reset(self, task: Task):
        self._task, self._actions = task, []
        return self.env.reset(task)

    def step(self, action: str) -> StepResult:
        for tries in range(max(0, self.retries) + 1):
            try:
                if tries:
                    self._rebuild()
                result = self.env.step(action)
            except SandboxUnavailable as e:
                result = StepResult((), 0.0, False, True, _unavailable(e), truncated_by=INFRA_STOP)
            if not is_infra_failure(result):
                break
        self._actions.append(action)
        return replace(result, infra_retries=tries)

    def _rebuild(self) -> None:
        """The env as it stood before the reply being retried."""
        self.env.reset(self._task)
        for action in self._actions:
            if is_infra_failure(self.env.step(action)):
                raise SandboxUnavailable("the sandbox failed again while the episode's earlier replies were replayed")
