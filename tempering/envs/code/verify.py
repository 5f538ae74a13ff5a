"""Check a candidate solution against tests it cannot game (see harness.py for how)."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass, field
from typing import Any

from ...errors import TaskError
from ...sandbox import Limits, Sandbox
from ...types import ExecResult, Score
from .harness import HARNESS

DEFAULT_LIMITS = Limits(wall_s=15, cpu_s=15, memory_mb=512, processes=32, disk_mb=32)


@dataclass(frozen=True)
class CodeTask:
    """A Python function to write. Either `test` (code defining `check(candidate)`, as in
    HumanEval) or `cases` (a list of {"args": [...], "expected": value}, scored per case)."""

    id: str
    prompt: str
    """The function's signature and docstring (and any helpers the tests use)."""
    entry_point: str
    test: str = ""
    cases: tuple[dict, ...] | None = None
    reference: str = ""
    """A known-good solution (the whole module)."""
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.entry_point.isidentifier():
            raise TaskError(f"task {self.id}: entry_point {self.entry_point!r} is not a Python identifier")
        if not self.test and self.cases is None:
            raise TaskError(f"task {self.id}: give `test` (code defining check(candidate)) or `cases`")

    def module(self, solution: str) -> str:
        """The module to test for a solution file: the file itself when it defines the
        entry point, else (a HumanEval completion: the function's body) the prompt
        followed by it, as HumanEval's own evaluator joins them."""
        if re.search(rf"^\s*def\s+{re.escape(self.entry_point)}\s*\(", solution, re.M):
            return solution
        return self.prompt + solution

    @staticmethod
    def from_json(obj: dict) -> "CodeTask":
        """A task in this format ({id, entry_point, prompt, test | cases, reference}) or in
        HumanEval's, as one record of HumanEval.jsonl is ({task_id, prompt, entry_point,
        canonical_solution, test}: the reference is prompt + canonical_solution)."""
        try:
            if "id" not in obj and "task_id" in obj:
                return CodeTask(
                    id=str(obj["task_id"]), prompt=obj.get("prompt", ""), entry_point=obj["entry_point"],
                    test=obj["test"], reference=obj.get("prompt", "") + obj.get("canonical_solution", ""),
                    metadata={"format": "humaneval"},
                )
            return CodeTask(
                id=str(obj["id"]), prompt=obj.get("prompt", ""), entry_point=obj["entry_point"],
                test=obj.get("test", ""), cases=tuple(obj["cases"]) if obj.get("cases") is not None else None,
                reference=obj.get("reference", ""),
            )
        except (KeyError, TypeError, AttributeError) as e:
            raise TaskError(f"malformed code task: missing or bad field {e}; need id (or HumanEval's task_id), "
                            "entry_point, and test or cases") from None


def _tagged(v):
    """The harness's wire form of a plain value (tuples, dicts and sets are tagged)."""
    if isinstance(v, tuple):
        return {"$t": [_tagged(x) for x in v]}
    if isinstance(v, list):
        return [_tagged(x) for x in v]
    if isinstance(v, dict):
        return {"$d": [[_tagged(k), _tagged(x)] for k, x in v.items()]}
    if isinstance(v, (set, frozenset)):
        return {"$s": [_tagged(x) for x in v], "frozen": isinstance(v, frozenset)}
    if isinstance(v, bytes):
        return {"$b": v.hex()}
    return v


def verify_code(task: CodeTask, solution: str, sandbox: Sandbox, limits: Limits = DEFAULT_LIMITS,
                per_call_s: float = 10.0) -> Score:
    """Run `solution` against the task's tests in the sandbox. value: 1/0 for `test`,
    the fraction of cases passed for `cases`; passed: every check passed, proven by the
    run's random token."""
    token = secrets.token_hex(16)
    spec = {"token": token, "prompt": task.prompt, "entry_point": task.entry_point, "per_call_s": per_call_s}
    if task.cases is not None:
        spec["cases"] = [{"args": _tagged(list(c["args"])), "expected": _tagged(c["expected"])} for c in task.cases]
    else:
        spec["test"] = task.test
    result = sandbox.run(HARNESS, files={"solution.py": solution}, stdin=json.dumps(spec), limits=limits)
    return score_result(result, token)


def score_result(result: ExecResult, token: str) -> Score:
    lines = result.stdout.splitlines()
    report: dict = {}
    for line in lines:
        if line.startswith('{"report"'):
            try:
                report = json.loads(line)["report"]
            except ValueError:
                pass
    passed = bool(lines) and lines[-1] == f"{token} PASS"
    total = int(report.get("total", 0)) or 1
    value = 1.0 if passed else min(int(report.get("passed", 0)), total - 1) / total
    if passed:
        status = "passed"
    elif result.status not in ("ok",):
        status = result.status  # timeout, memory, output_limit, killed, sandbox_error
    elif report.get("failures") and "did not load" in report["failures"][0].get("error", ""):
        status = "load_error"
    else:
        status = "failed"
    details = {
        "status": status,
        "checks_passed": int(report.get("passed", 0)),
        "checks_total": int(report.get("total", 0)),
        "failures": report.get("failures", [])[:5],
        "candidate_stderr": report.get("candidate_stderr", ""),
        "sandbox_status": result.status,
        "sandbox_detail": result.detail,
        "wall_s": result.wall_s,
    }
    return Score(value=value, passed=passed, details=details)
