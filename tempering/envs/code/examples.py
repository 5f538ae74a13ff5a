"""The examples a HumanEval-style docstring shows, read as test cases: what the code envs run
a reply against between attempts (repair.py), before the hidden tests score the last one.

Two shapes are read, wherever they stand in the prompt: a doctest (the prompt line holds the
call, `...` lines continue it, its output is on the next lines up to a blank line or the next
prompt), and one line (or a bullet) that starts with the call, then ==, ==>, ->, =>, ➞, =,
"returns" or "should return", then the value:

>>> prompt = "def fn(a, b):\\n    '''\\n    >>> fn(1, [2, 3])\\n    5\\n    fn(0, []) == 0\\n    '''\\n"
>>> docstring_cases(prompt, "fn")
[{'args': [1, [2, 3]], 'expected': 5}, {'args': [0, []], 'expected': 0}]

An example is kept only when the call is to the entry point itself with literal positional
arguments and the value is a literal of the types the harness carries: `sorted(fn(x))`, a
keyword argument, printed output and prose ("for x = 3 the output should be 9") are not read.
"""

from __future__ import annotations

import ast
import re

_ONE_LINE = re.compile(r"==>|==|->|=>|➞|\bshould return\b|\breturns\b|=")
_BULLET = re.compile(r"^[*-]\s+")
_PLAIN = (type(None), bool, int, float, str, bytes)


def docstring_cases(prompt: str, entry_point: str) -> list[dict]:
    """The prompt's examples of `entry_point` as cases ({"args": [...], "expected": v}), in
    the order the prompt shows them, without repeats."""
    lines = prompt.splitlines()
    cases: list[dict] = []
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith(">>>"):
            case, i = _doctest(lines, i, entry_point)
        else:
            case = _one_line(_BULLET.sub("", _before_quotes(lines[i].strip())[0]), entry_point)
            i += 1
        if case is not None and case not in cases:
            cases.append(case)
    return cases


def _doctest(lines: list[str], i: int, entry_point: str) -> tuple[dict | None, int]:
    """The doctest whose `>>>` line is lines[i]: its case, and the index of the line after it.
    Its output runs to a blank line or the next `>>>`; when those lines do not read as one
    value (prose straight after the output), the longest leading run that does."""
    call = lines[i].strip()[3:]
    i += 1
    while i < len(lines) and lines[i].strip().startswith("..."):
        call += "\n" + lines[i].strip()[3:]
        i += 1
    out: list[str] = []
    while i + len(out) < len(lines) and lines[i + len(out)].strip() and not lines[i + len(out)].strip().startswith(">>>"):
        text, closed = _before_quotes(lines[i + len(out)].strip())
        out.append(text)
        if closed:
            break
    if not "".join(out):  # `>>> fn(x) == 5` with no output line: the one-line shape behind a prompt
        return _one_line(call.strip(), entry_point), i + len(out)
    for k in range(len(out), 0, -1):
        case = _case(call, " ".join(out[:k]), entry_point)
        if case is not None:
            return case, i + k
    return None, i  # not an example this reads: its output lines are scanned as any others


def call_text(entry_point: str, case: dict) -> str:
    """The example's call as Python, e.g. `add(2, [3])` (the form feedback names it by)."""
    return f"{entry_point}({', '.join(repr(a) for a in case['args'])})"


def _before_quotes(line: str) -> tuple[str, bool]:
    """The line up to a closing triple quote, and whether it had one."""
    for quote in ('"""', "'''"):
        if quote in line:
            return line.split(quote)[0], True
    return line, False


def _one_line(line: str, entry_point: str) -> dict | None:
    if not line.startswith(entry_point + "("):
        return None
    for m in _ONE_LINE.finditer(line):
        right = line[m.end():].strip()
        case = _case(line[:m.start()], right, entry_point) or _case(line[:m.start()], right.rstrip(".,;"), entry_point)
        if case is not None:
            return case
    return None


def _case(call: str, expected: str, entry_point: str) -> dict | None:
    """{"args", "expected"} when `call` is `entry_point(literals...)` and `expected` a literal."""
    try:
        node = ast.parse(call.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == entry_point
            and not node.keywords and expected.strip()):
        return None
    try:
        args = [ast.literal_eval(a) for a in node.args]
        value = ast.literal_eval(expected.strip())
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if not all(_plain(v) for v in (*args, value)):
        return None
    return {"args": args, "expected": value}


def _plain(v) -> bool:
    """Whether `v` is data the harness carries (no complex numbers, no Ellipsis)."""
    if isinstance(v, (list, tuple, set, frozenset)):
        return all(_plain(x) for x in v)
    if isinstance(v, dict):
        return all(_plain(k) and _plain(x) for k, x in v.items())
    return type(v) in _PLAIN
