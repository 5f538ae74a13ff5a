"""Plausible wrong versions of a correct function: the bugs people and small models write.

Each mutant changes one thing in the reference's syntax tree: a comparison flipped or
loosened (`<` to `<=`), an arithmetic operator swapped (`+` to `-`), a constant off by one,
a boolean or a `and`/`or` swapped, a slice bound moved, `min`/`max` swapped, a `reversed`
or `sorted(..., reverse=True)` dropped. Demonstrations use them as the first attempt that
the env's real feedback then corrects (tempering.trainer.demos).
"""

from __future__ import annotations

import ast
import random
from typing import Iterator

_COMPARE = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
            ast.In: ast.NotIn, ast.NotIn: ast.In}
_BINOP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Add, ast.FloorDiv: ast.Mod, ast.Mod: ast.FloorDiv}
_CALLS = {"min": "max", "max": "min", "any": "all", "all": "any"}


def _sites(tree: ast.AST) -> list[tuple[ast.AST, str]]:
    """Every (node, how) a single mutation can change."""
    sites = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and type(node.ops[0]) in _COMPARE:
            sites.append((node, "compare"))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP:
            sites.append((node, "binop"))
        elif isinstance(node, ast.BoolOp):
            sites.append((node, "boolop"))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            sites.append((node, "int"))
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            sites.append((node, "bool"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
            sites.append((node, "call"))
        elif isinstance(node, ast.Call) and any(k.arg == "reverse" for k in node.keywords):
            sites.append((node, "reverse"))
    return sites


def _apply(node: ast.AST, how: str) -> None:
    if how == "compare":
        node.ops[0] = _COMPARE[type(node.ops[0])]()
    elif how == "binop":
        node.op = _BINOP[type(node.op)]()
    elif how == "boolop":
        node.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
    elif how == "int":
        node.value = node.value + 1 if node.value != 1 else 0
    elif how == "bool":
        node.value = not node.value
    elif how == "call":
        node.func.id = _CALLS[node.func.id]
    elif how == "reverse":
        node.keywords = [k for k in node.keywords if k.arg != "reverse"]


def mutants(source: str, rng: random.Random, limit: int = 8) -> Iterator[str]:
    """Up to `limit` one-change variants of `source`, in a seeded order; none equal to it."""
    try:
        count = len(_sites(ast.parse(source)))
    except SyntaxError:
        return
    order = list(range(count))
    rng.shuffle(order)
    seen = {source}
    for i in order[:limit * 2]:
        tree = ast.parse(source)
        node, how = _sites(tree)[i]
        _apply(node, how)
        try:
            text = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
        except (ValueError, TypeError):
            continue
        if text not in seen:
            seen.add(text)
            yield text
            if len(seen) > limit:
                return
