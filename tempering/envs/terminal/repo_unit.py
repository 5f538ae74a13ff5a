"""The one function a repository task's bug is in, as text: find it, show it, and put a
model's version of it back (the function rung, repo_function.py).

    unit, fixed = bug_unit(mutated, original) # Units: the function or method holding the change, in each
    unit.text(mutated)                        # its source at column 0, decorators included
    splice(mutated, unit, text)               # the module with that function replaced by `text`
    function_in(reply, unit.name)             # (the def of that name in the reply's python block, problem)

The unit is the outermost function holding the first changed line: a top-level function, or
a method (of a class, or of a class inside one); a function nested in it comes whole with it.
A method is shown dedented to column 0 and indented back when spliced. Lines that begin
inside a multi-line string are never re-indented either way: their whitespace is the
string's content.
"""

from __future__ import annotations

import ast
import io
import re
import textwrap
import tokenize
from dataclasses import dataclass

from tempering.errors import TaskError

_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)
_STRING_TOKENS = {tokenize.STRING} | ({tokenize.FSTRING_MIDDLE} if hasattr(tokenize, "FSTRING_MIDDLE") else set())


@dataclass(frozen=True)
class Unit:
    """Where a function sits in a module."""

    qualname: str
    """`Class.method` or `function`."""
    first: int
    """Its first line (1-based): the first decorator's, else the `def` line."""
    last: int
    indent: int
    """Columns before its `def` (0 for a top-level function)."""

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def owner(self) -> str | None:
        """The class a method belongs to (`Outer.Inner` for a nested class), else None."""
        return self.qualname.rsplit(".", 1)[0] if "." in self.qualname else None

    def text(self, source: str) -> str:
        """The function's source, moved to column 0."""
        lines = source.splitlines(True)[self.first - 1:self.last]
        return _shift("".join(lines), -self.indent)


def _string_lines(text: str) -> set[int]:
    """Lines (1-based) that begin inside a multi-line string literal."""
    inside: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in _STRING_TOKENS and tok.end[0] > tok.start[0]:
                inside.update(range(tok.start[0] + 1, tok.end[0] + 1))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return inside


def _shift(text: str, columns: int) -> str:
    """`text` indented by `columns` (or dedented, when negative, where a line has that much
    leading whitespace); blank lines become empty, string contents are left alone."""
    keep = _string_lines(text)
    out = []
    for i, line in enumerate(text.splitlines(True), 1):
        if i in keep:
            out.append(line)
        elif not line.strip():
            out.append("\n" if line.endswith("\n") else "")
        elif columns >= 0:
            out.append(" " * columns + line)
        else:
            cut = -columns
            out.append(line[cut:] if line[:cut].strip() == "" and len(line) > cut else line.lstrip(" \t"))
    return "".join(out)


def _first_difference(a: str, b: str) -> int:
    """The first line (1-based) where `a` and `b` differ."""
    la, lb = a.splitlines(True), b.splitlines(True)
    line = next((i for i, (x, y) in enumerate(zip(la, lb)) if x != y), min(len(la), len(lb)))
    return line + 1


def _start(node: ast.stmt) -> int:
    """A statement's first line, its decorators' included."""
    return min([d.lineno for d in getattr(node, "decorator_list", ())] + [node.lineno])


def _find(tree: ast.Module, line: int) -> Unit | None:
    """The outermost function (a method counts) whose span holds `line`."""
    def visit(body: list[ast.stmt], prefix: str) -> Unit | None:
        for node in body:
            if not _start(node) <= line <= (node.end_lineno or node.lineno):
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                return Unit(prefix + node.name, _start(node), node.end_lineno or node.lineno, node.col_offset)
            if isinstance(node, ast.ClassDef):
                return visit(node.body, prefix + node.name + ".")
            for field in ("body", "orelse", "finalbody", "handlers"):  # `if`/`try` around a def
                inner = visit(getattr(node, field, None) or [], prefix)
                if inner is not None:
                    return inner
        return None

    return visit(tree.body, "")


def bug_unit(mutated: str, original: str) -> tuple[Unit, Unit]:
    """The function holding the bug: (where it is in `mutated`, where in `original`). It is
    the outermost function around the first line where the two differ, found in `original`
    (a statement dropped at a function's end leaves no changed line inside it in `mutated`),
    and the function at the same first line in `mutated` (the text before it is shared).
    Raises TaskError when there is none."""
    line = _first_difference(mutated, original)
    before = _find(ast.parse(original), line)
    after = before and _find(ast.parse(mutated), before.first)
    if not after or after.qualname != before.qualname:
        raise TaskError(f"the change at line {line} is in no function")
    return after, before


def splice(source: str, unit: Unit, text: str) -> str:
    """`source` with `unit`'s lines replaced by `text` (a function at column 0), indented to the unit's place."""
    lines = source.splitlines(True)
    body = _shift(text if text.endswith("\n") else text + "\n", unit.indent)
    return "".join(lines[:unit.first - 1]) + body + "".join(lines[unit.last:])


def function_in(reply: str, name: str) -> tuple[str | None, str | None]:
    """(the function `name` from the reply's python blocks, at column 0; None, and why not).
    The last block that defines it wins; a reply with no fenced block is read whole. Only
    that function is taken: anything else in the block is left out."""
    blocks = [b for b in _FENCE.findall(reply) if b.strip()] or ([reply] if reply.strip() else [])
    if not blocks:
        return None, "The reply is empty."
    problem = None
    for block in reversed(blocks):
        try:
            tree, block = _parse(block)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            problem = problem or _unparsable(e)
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
                lines = block.splitlines(True)[_start(node) - 1:node.end_lineno]
                return _shift("".join(lines), -node.col_offset), None
    return None, problem or f"Your reply has no `def {name}(...)`: reply with the whole fixed function in a ```python block."


def _parse(block: str) -> tuple[ast.Module, str]:
    """The block's tree and text, dedented first where it was pasted at a class's indentation."""
    try:
        return ast.parse(block), block
    except IndentationError:
        block = textwrap.dedent(block)
        return ast.parse(block), block


def _unparsable(e: Exception) -> str:
    where = f" (line {e.lineno})" if getattr(e, "lineno", None) else ""
    return f"Your code does not parse: {type(e).__name__}: {getattr(e, 'msg', e)}{where}."
