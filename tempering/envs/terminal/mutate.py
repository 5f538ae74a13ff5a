"""Deterministic single-site bugs in Python source, by AST mutation, for repository tasks.

    sites = mutation_sites(source)             # every place a bug can go, in a fixed order
    mutant = apply(source, sites[i])           # Mutant: new source + where and what changed

Operators (one site each; only inside function bodies, so a module still imports):

    compare      flip a comparison: < <=, > >=, == !=, in / not in, is / is not
    off_by_one   an integer in a slice, subscript, range() call, comparison or +/- term, +1 or -1
    constant     any other number +1 / -1 (floats: doubled, 0.0 -> 1.0), True <-> False
    arithmetic   + <-> - (also += <-> -=)
    boolean      and <-> or; drop a `not`
    swap_args    swap a call's first two positional arguments
    drop_branch  drop an if's else/elif branch, or a whole if without one

The edit is made in the text, at the node's own span, so the rest of the file keeps its
comments and layout (a dropped branch re-prints only its `if` statement). A mutant is kept
only when re-parsing the edited text gives exactly the mutated tree.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

OPERATORS = ("compare", "off_by_one", "constant", "arithmetic", "boolean", "swap_args", "drop_branch")
FLIP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
        ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}
SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=", ast.In: "in",
          ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not", ast.Add: "+", ast.Sub: "-", ast.And: "and",
          ast.Or: "or"}


@dataclass(frozen=True)
class Site:
    """One possible bug: `operator` applied to the `index`-th node of `ast.walk(tree)`."""

    operator: str
    index: int
    variant: int
    """Which of the operator's changes (e.g. +1 or -1)."""
    line: int
    function: str
    """The enclosing function, `Class.method` style."""

    @property
    def key(self) -> str:
        return f"{self.operator}:{self.line}:{self.index}:{self.variant}"


@dataclass(frozen=True)
class Mutant:
    site: Site
    source: str
    description: str
    """What changed, for people (never shown to the agent): "line 12 in f: `<` became `<=`"."""


def _functions(tree: ast.Module) -> dict[int, str]:
    """id(node) -> qualified name of the function whose body holds it. Docstrings,
    decorators, defaults and class-level code belong to no function."""
    owner: dict[int, str] = {}

    def visit(node: ast.AST, qual: str, func: str | None) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = qual + node.name
            body = node.body[1:] if _is_docstring(node.body[0]) else node.body
            for stmt in body:
                visit(stmt, name + ".", name)
            return
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                visit(stmt, qual + node.name + ".", func)
            return
        if func is not None:
            owner[id(node)] = func
        for child in ast.iter_child_nodes(node):
            visit(child, qual, func)

    for stmt in tree.body:
        visit(stmt, "", None)
    return owner


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}


def _int_context(parent: ast.AST | None) -> bool:
    """Where an integer is most likely an index or a bound."""
    if isinstance(parent, (ast.Slice, ast.Subscript, ast.Compare)):
        return True
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, (ast.Add, ast.Sub)):
        return True
    return isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id == "range"


def _changes(node: ast.AST, parent: ast.AST | None, context: ast.AST | None) -> list[str]:
    """The operators that apply at `node`, one entry per variant; `context` is the parent
    of a negative number's `-`, else the parent."""
    if isinstance(node, ast.Compare) and type(node.ops[0]) in FLIP:
        return ["compare"]
    if isinstance(node, ast.Constant) and isinstance(parent, ast.JoinedStr | ast.FormattedValue):
        return []
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return ["constant"]
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        op = "off_by_one" if _int_context(context) else "constant"
        return [op, op]
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        return ["constant"]
    if isinstance(node, (ast.BinOp, ast.AugAssign)) and isinstance(node.op, (ast.Add, ast.Sub)):
        return ["arithmetic"]
    if isinstance(node, ast.BoolOp) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
        return ["boolean"]
    if (isinstance(node, ast.Call) and len(node.args) >= 2 and not any(isinstance(a, ast.Starred) for a in node.args[:2])
            and ast.dump(node.args[0]) != ast.dump(node.args[1])):
        return ["swap_args"]
    if isinstance(node, ast.If) and (node.orelse or _removable(node, parent)):
        return ["drop_branch"]
    return []


def _removable(node: ast.If, parent: ast.AST | None) -> bool:
    """An if without else can go when its block keeps another statement (or it is an elif)."""
    if isinstance(parent, ast.If) and parent.orelse == [node]:
        return True
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and node in block:
            return len(block) > 1
    return False


def mutation_sites(source: str) -> list[Site]:
    """Every site in `source`'s function bodies, in `ast.walk` order."""
    tree = ast.parse(source)
    owner, parents = _functions(tree), _parents(tree)
    sites = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) not in owner:
            continue
        parent = parents.get(id(node))
        context = parents.get(id(parent)) if isinstance(parent, ast.UnaryOp) else parent
        for variant, op in enumerate(_changes(node, parent, context)):
            sites.append(Site(op, index, variant, getattr(node, "lineno", 0), owner[id(node)]))
    return sites


def _mutate(node: ast.AST, parent: ast.AST | None, site: Site) -> tuple[ast.AST | None, str]:
    """Change `node` in place (or return a replacement node); also what changed, in words."""
    op = site.operator
    if op == "compare":
        old = type(node.ops[0])
        node.ops[0] = FLIP[old]()
        return node, f"`{SYMBOL[old]}` became `{SYMBOL[FLIP[old]]}`"
    if op in ("off_by_one", "constant"):
        v = node.value
        new = (not v if isinstance(v, bool) else v + (1, -1)[site.variant] if isinstance(v, int)
               else (1.0 if v == 0 else v * 2))
        if new < 0:  # as the parser reads `-1`
            return ast.UnaryOp(ast.USub(), ast.Constant(-new)), f"`{v!r}` became `{new!r}`"
        node.value = new
        return node, f"`{v!r}` became `{new!r}`"
    if op == "arithmetic":
        old = type(node.op)
        node.op = ast.Sub() if old is ast.Add else ast.Add()
        return node, f"`{SYMBOL[old]}` became `{SYMBOL[type(node.op)]}`"
    if op == "boolean" and isinstance(node, ast.BoolOp):
        old = type(node.op)
        node.op = ast.Or() if old is ast.And else ast.And()
        return node, f"`{SYMBOL[old]}` became `{SYMBOL[type(node.op)]}`"
    if op == "boolean":
        return node.operand, "a `not` was dropped"
    if op == "swap_args":
        node.args[0], node.args[1] = node.args[1], node.args[0]
        return node, "the first two arguments of a call were swapped"
    if op == "drop_branch":
        if node.orelse:
            node.orelse = []
            return node, "an else/elif branch was dropped"
        return None, "an if statement was dropped"
    raise ValueError(f"unknown mutation operator {op!r}")


def _replace_child(parent: ast.AST, old: ast.AST, new: ast.AST | None) -> None:
    for name, value in ast.iter_fields(parent):
        if isinstance(value, list) and any(v is old for v in value):
            setattr(parent, name, [v for v in value if v is not old] if new is None
                    else [new if v is old else v for v in value])
            return
        if value is old:
            setattr(parent, name, new)
            return


def _chain_start(node: ast.AST, parents: dict[int, ast.AST]) -> ast.AST:
    """The `if` that starts the elif chain `node` is part of (`node` itself when none)."""
    parent = parents.get(id(node))
    while isinstance(node, ast.If) and isinstance(parent, ast.If) and parent.orelse == [node]:
        node, parent = parent, parents.get(id(parent))
    return node


def _edit(source: str, start: tuple[int, int], end: tuple[int, int], text: str) -> str:
    """Replace source from (line, utf-8 col) to (line, utf-8 col), as ast gives them, with `text`."""
    lines = source.encode().splitlines(keepends=True)
    before = b"".join(lines[: start[0] - 1]) + lines[start[0] - 1][: start[1]]
    after = lines[end[0] - 1][end[1]:] + b"".join(lines[end[0]:])
    return (before + text.encode() + after).decode()


def _candidates(source: str, target: ast.AST, new: ast.AST | None, top: ast.AST | None) -> list[str]:
    """Edited texts that may parse to the mutated tree, most local first."""
    if top is None:  # an expression: replace its own span, bare or in parentheses
        span = (target.lineno, target.col_offset), (target.end_lineno, target.end_col_offset)
        text = ast.unparse(new)
        return [_edit(source, *span, t) for t in (text, f"({text})")]
    lines = source.splitlines(keepends=True)
    head, tail = "".join(lines[: top.lineno - 1]), "".join(lines[top.end_lineno:])
    if new is None and top is target:  # the whole if goes
        return [head + tail]
    indent = lines[top.lineno - 1][: top.col_offset]
    return [head + "".join(indent + x + "\n" for x in ast.unparse(top).splitlines()) + tail]


def apply(source: str, site: Site) -> Mutant | None:
    """`source` with the bug at `site`, or None when the text cannot be edited faithfully."""
    tree = ast.parse(source)
    target = list(ast.walk(tree))[site.index]
    parents = _parents(tree)
    parent = parents[id(target)]
    top = _chain_start(target, parents) if site.operator == "drop_branch" else None
    span = (target.lineno, target.col_offset, target.end_lineno, target.end_col_offset)
    new, what = _mutate(target, parent, site)
    if new is not target:
        _replace_child(parent, target, new)
    expected = ast.dump(tree)
    for attr, value in zip(("lineno", "col_offset", "end_lineno", "end_col_offset"), span):
        setattr(target, attr, value)  # where the text to replace is, whatever became of the node
    for mutated in _candidates(source, target, new, top):
        try:
            if ast.dump(ast.parse(mutated)) == expected:
                return Mutant(site, mutated, f"line {site.line} in {site.function}: {what}")
        except SyntaxError:
            continue
    return None
