"""Every `>>>` example in the package's docstrings runs, and prints what it says it prints."""

from __future__ import annotations

import ast
import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "tempering"


def _has_examples(path: Path) -> bool:
    """Whether a docstring of the module, or of one of its classes or functions, holds `>>>`
    (a `>>>` inside a string the code builds is not an example)."""
    tree = ast.parse(path.read_text())
    nodes = [tree] + [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    return any(">>>" in (ast.get_docstring(n, clean=False) or "") for n in nodes)


WITH_EXAMPLES = sorted(
    ".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")
    for p in PACKAGE.rglob("*.py") if _has_examples(p)
)


def test_examples_are_found():
    assert "tempering.algorithms.advantages" in WITH_EXAMPLES  # the scan itself works


@pytest.mark.parametrize("name", WITH_EXAMPLES)
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.attempted > 0, f"{name} has '>>>' in its source but no example doctest can run"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed (run it verbose)"
