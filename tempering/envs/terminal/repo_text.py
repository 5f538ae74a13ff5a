"""The words of a generated repository task: its test files, the issue a user would file,
and the instruction the agent reads (repo_gen.py makes the rest)."""

from __future__ import annotations

import ast
import random
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .repo_gen import Case


def render_tests(package: str, cases: list[Case]) -> str:
    body = "".join(f"\n\ndef {c.name}():\n    expect({c.code!r}, {c.expected})\n" for c in cases)
    return (f'"""Tests for {package}. Run: python tests/{"test_" + package}.py (or pytest)."""\n\n'
            f"from helpers import Raised, expect, main  # noqa: F401\n{body}\n\n"
            f'if __name__ == "__main__":\n    main(globals())\n')


def _session(package: str, code: str, shown: str) -> str:
    lines = [f">>> import {package}"]
    body = code.splitlines()
    if shown == "None":  # the prompt shows nothing for None
        body[-1] = f"print({body[-1]})"
    for i, line in enumerate(body):
        lines.append(("... " if line.startswith((" ", "\t")) else ">>> ") + line)
        if line.startswith((" ", "\t")) and (i + 1 == len(body) or not body[i + 1].startswith((" ", "\t"))):
            lines.append("...")
    return "\n".join(lines + [shown])


def _clip(text: str, limit: int = 400) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def issue_text(rng: random.Random, package: str, case: Case, got: dict) -> str:
    """A user's report of one failing test: the call, what it gave, what was expected."""
    fn = case.function
    expected_raise = case.expected.startswith("Raised(")
    want = ast.literal_eval(case.expected[len("Raised("):-1]) if expected_raise else case.expected
    if "raised" in got:
        name = got["raised"]
        shown = f"Traceback (most recent call last):\n  ...\n{name}: {got.get('message', '')}".rstrip(": ")
        title = rng.choice([f"`{fn}` raises {name}", f"{name} from `{package}.{fn}`",
                            f"`{package}.{fn}` crashes with {name}"])
    else:
        shown = _clip(got.get("value", "?"))
        title = rng.choice([f"`{fn}` returns the wrong result", f"Wrong result from `{package}.{fn}`",
                            f"`{package}.{fn}` gives an incorrect answer", f"Unexpected output from `{fn}`"])
        if expected_raise:
            title = rng.choice([f"`{fn}` should raise {want}", f"`{package}.{fn}` accepts input it should reject"])
    if expected_raise:
        wish = rng.choice([f"It should raise `{want}`.", f"I expected a `{want}` here."])
    else:
        wish = rng.choice([f"Expected:\n\n    {_clip(want)}", f"I expected `{_clip(want)}` instead.",
                           f"It should give `{_clip(want)}`."])
    intro = rng.choice([f"I ran into this with {package}:", "Minimal reproduction:", "Steps to reproduce:",
                        "Here is what I see:"])
    closing = rng.choice(["", "", "Other inputs I tried look fine.", "This looks like a regression."])
    return (f"## {title}\n\n{intro}\n\n```python\n{_session(package, case.code, shown)}\n```\n\n{wish}\n"
            + (f"\n{closing}\n" if closing else ""))


def instruction(package: str, issue: str) -> str:
    return (f"The Python package `{package}` is checked out in /app ({package}/ holds its code, tests/ its "
            f"tests). A user filed this issue:\n\n---\n{issue}---\n\nFix the bug in the package so that the issue "
            f"is resolved and everything else behaves as before. The tests in /app/tests are restored before "
            f"grading and held-out tests run too, so change only the package. Run the tests with "
            f"`python tests/test_{package}.py` (pytest is not installed).")
