"""A canned-result sandbox: `Sandbox.run`'s signature, none of its mechanism.

    sb = CannedSandbox([ExecResult(status="ok", exit_code=0, stdout="2\\n", stderr="",
                                   wall_s=0.01, cpu_s=0.01, peak_memory_mb=5.0)])
    sb.run("print(1 + 1)").stdout      # "2\\n": the given results, in order
    sb.calls[0].code                   # "print(1 + 1)": what each run was asked to do

For tests of code that takes a sandbox (verifiers, envs): nothing is executed, so they run
anywhere, fast, and a test can hand back any outcome (a timeout, a memory kill) at will.
`LosingSandbox` fails as infrastructure on cue, from any number of threads (envs/infra.py).
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable

from tempering.types import ExecResult


@dataclass(frozen=True)
class RunCall:
    """One call to CannedSandbox.run, as it was made."""

    code: str
    language: str
    stdin: str | bytes
    files: dict = field(default_factory=dict)
    limits: object = None
    fetch: tuple[str, ...] = ()


class CannedSandbox:
    """Answers each `run` with the next of `results`; past the last one, raises (or repeats
    the last, with `repeat_last=True`)."""

    def __init__(self, results: Iterable[ExecResult], repeat_last: bool = False) -> None:
        self.results, self.repeat_last = list(results), repeat_last
        self.calls: list[RunCall] = []

    def run(self, code: str, language: str = "python", stdin: str | bytes = "", files: dict | None = None,
            limits=None, fetch: tuple[str, ...] | list[str] = (), *, trace: bool = False) -> ExecResult:
        self.calls.append(RunCall(code, language, stdin, dict(files or {}), limits, tuple(fetch)))
        i = len(self.calls) - 1
        if i >= len(self.results):
            if not (self.repeat_last and self.results):
                raise AssertionError(f"CannedSandbox: run {i + 1} asked for, but only {len(self.results)} results given")
            i = len(self.results) - 1
        return self.results[i]

    def close(self) -> None:
        pass

    def __enter__(self) -> "CannedSandbox":
        return self

    def __exit__(self, *exc) -> None:
        pass


class LosingSandbox:
    """Runs nothing, and is lost on cue: every run of code that holds `always`, and the first run
    of code that holds `once`, ends as sandbox_error (the sandbox failed, not the code); the
    others end ok with empty output. `calls[code]` counts the runs of each code."""

    def __init__(self, always: str = "BROKEN", once: str = "FLAKY") -> None:
        self.always, self.once = always, once
        self.calls: Counter[str] = Counter()
        self._lock = threading.Lock()  # verifiers run on several threads

    def run(self, code: str, language: str = "python", stdin: str | bytes = "", files: dict | None = None,
            limits=None, fetch: tuple[str, ...] | list[str] = (), *, trace: bool = False) -> ExecResult:
        with self._lock:
            self.calls[code] += 1
            lost = self.always in code or (self.once in code and self.calls[code] == 1)
        if lost:
            return ExecResult("sandbox_error", None, "", "", 0.0, 0.0, 0.0, detail="the fork server died")
        return ExecResult("ok", 0, "", "", 0.0, 0.0, 0.0)
