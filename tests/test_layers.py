"""Imports flow one way (DESIGN.md, "Package layout"): a module may import its own layer and
the layers below it, never one above.

Every module of the package is parsed with `ast` (nothing is imported), and every
`tempering.X` import is mapped to the layer X: absolute and relative, at module level or
inside functions and `if TYPE_CHECKING:` blocks alike.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "tempering"

LAYERS = ("cli", "server", "pipeline", "trainer", "eval", "scheduler", "rollout", "algorithms", "models", "envs", "safety",
          "sandbox", ("types", "config", "errors", "storage"))
"""Top to bottom, as DESIGN.md draws them; a tuple is one layer."""

EXCEPTIONS: dict[tuple[str, str], str] = {}
"""(importing file relative to the package, imported module) -> why it may go upward. Empty."""

RANK = {name: i for i, layer in enumerate(LAYERS) for name in (layer if isinstance(layer, tuple) else (layer,))}


def layer_of(module: str) -> str | None:
    """The layer of a dotted `tempering.*` module name (None for the package root)."""
    parts = module.split(".")
    return parts[1].removesuffix(".py") if len(parts) > 1 else None


def imported_modules(path: Path, root: Path) -> list[tuple[int, str]]:
    """(line, absolute module name) of every `tempering` import in one file."""
    rel = path.relative_to(root.parent).with_suffix("")
    package = list(rel.parts[:-1])  # the package a relative import starts from, for __init__ too
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.split(".")[0] == "tempering"]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.split(".")[0] != "tempering":
                continue
            if module == "tempering":  # `from tempering import envs`: each name is a module
                found += [(node.lineno, f"tempering.{a.name}") for a in node.names]
            else:
                found.append((node.lineno, module))
    return found


def upward_imports(root: Path = PACKAGE) -> list[str]:
    """One line per import of a layer above the importing module's own: file:line: import."""
    problems = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        own = rel.parts[0].removesuffix(".py") if len(rel.parts) > 1 or rel.name != "__init__.py" else None
        if own is None:
            continue
        assert own in RANK, f"{rel}: layer {own!r} is not in LAYERS; add it where DESIGN.md puts it"
        for line, module in imported_modules(path, root):
            target = layer_of(module)
            if target is None or (str(rel), module) in EXCEPTIONS:
                continue
            assert target in RANK, f"{rel}:{line}: imports {module}, whose layer {target!r} is not in LAYERS"
            if RANK[target] < RANK[own]:
                problems.append(f"tempering/{rel}:{line}: {own} imports {module} ({target} is above {own})")
    return problems


def test_no_module_imports_a_layer_above_its_own():
    problems = upward_imports()
    assert not problems, "upward imports (see DESIGN.md, Package layout):\n" + "\n".join(problems)


def test_the_checker_sees_relative_and_function_level_imports(tmp_path):
    pkg = tmp_path / "tempering"
    (pkg / "envs" / "sub").mkdir(parents=True)
    (pkg / "envs" / "__init__.py").write_text("")
    (pkg / "envs" / "sub" / "mod.py").write_text(
        "from ...rollout import x\n"
        "def f():\n    from tempering import trainer\n"
        "from tempering.sandbox import y\n")
    assert upward_imports(pkg) == [
        "tempering/envs/sub/mod.py:1: envs imports tempering.rollout (rollout is above envs)",
        "tempering/envs/sub/mod.py:3: envs imports tempering.trainer (trainer is above envs)"]


if __name__ == "__main__":  # `python tests/test_layers.py [PACKAGE_DIR]`: list the upward imports
    import sys

    found = upward_imports(Path(sys.argv[1]) if len(sys.argv) > 1 else PACKAGE)
    print("\n".join(found) + f"\n{len(found)} upward imports")
