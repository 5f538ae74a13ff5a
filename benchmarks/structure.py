"""How the package reads, in numbers: the figures STYLE.md sets limits for.

    python benchmarks/structure.py [ROOT]        # ROOT: a checkout (default: this one)
    python benchmarks/structure.py /tmp/old --json

Counts files over 400 lines, functions over 60 lines (each `def`'s span in the source,
decorators and docstring included), imports of a layer above the importer's own (the
checker of tests/test_layers.py, run on ROOT), string-keyed reads of records that cross
a layer (`info[...]`, `details[...]`, `extra[...]`, `slot[...]`, `limits[...]` and their
`.get(...)`), and the line counts of the two files the issue names. With the `duplicates`
command on PATH, the number of pairs of six or more shared lines under tempering/ too.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
STRING_KEYED = re.compile(r"""\b(info|details|extra|slot|limits)(\[["']|\.get\(["'])""")
FILE_LIMIT, FUNCTION_LIMIT = 400, 60


def _layer_checker():
    spec = importlib.util.spec_from_file_location("_layers", HERE / "tests" / "test_layers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.upward_imports


def long_functions(path: Path) -> list[tuple[str, int]]:
    tree = ast.parse(path.read_text(), str(path))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            n = node.end_lineno - start + 1
            if n > FUNCTION_LIMIT:
                out.append((f"{node.name}:{node.lineno}", n))
    return out


def measure(root: Path) -> dict:
    package = root / "tempering"
    files = sorted(package.rglob("*.py"))
    lines = {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in files}
    functions = {f"{p.relative_to(root)}:{name}": n for p in files for name, n in long_functions(p)}
    keyed = {str(p.relative_to(root)): len(STRING_KEYED.findall(p.read_text())) for p in files}
    out = {
        "files": len(files),
        "files_over_400": {k: v for k, v in lines.items() if v > FILE_LIMIT},
        "functions_over_60": dict(sorted(functions.items(), key=lambda kv: -kv[1])),
        "upward_imports": _layer_checker()(package),
        "string_keyed_reads": sum(keyed.values()),
        "string_keyed_by_file": {k: v for k, v in sorted(keyed.items(), key=lambda kv: -kv[1]) if v},
        "trainer/rl.py": lines.get("tempering/trainer/rl.py"),
        "sandbox/server.py": lines.get("tempering/sandbox/server.py"),
    }
    if shutil.which("duplicates"):
        head = subprocess.run(["duplicates", "--repo", str(package), "--seconds", "120"], capture_output=True,
                              text=True).stdout.splitlines()
        out["duplicates"] = head[0] if head else ""
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", nargs="?", default=str(HERE))
    ap.add_argument("--json", action="store_true", help="print everything as JSON")
    args = ap.parse_args()
    m = measure(Path(args.root).resolve())
    if args.json:
        print(json.dumps(m, indent=1))
        return
    print(f"files: {m['files']}; over {FILE_LIMIT} lines: {len(m['files_over_400'])} {m['files_over_400']}")
    print(f"functions over {FUNCTION_LIMIT} lines: {len(m['functions_over_60'])}")
    for k, v in m["functions_over_60"].items():
        print(f"   {v:4d}  {k}")
    print(f"upward imports: {len(m['upward_imports'])}")
    for p in m["upward_imports"]:
        print("  ", p)
    print(f"string-keyed reads (info/details/extra/slot/limits): {m['string_keyed_reads']}")
    print(f"trainer/rl.py: {m['trainer/rl.py']} lines; sandbox/server.py: {m['sandbox/server.py']} lines")
    if "duplicates" in m:
        print(f"duplicates: {m['duplicates']}")


if __name__ == "__main__":
    main()
