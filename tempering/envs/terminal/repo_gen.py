"""Generated repository tasks: a small standard-library module as a one-package repository,
with one bug injected, an issue describing it, and tests that catch it. Offline, from a seed.

    spec = generate("train", 0)            # RepoSpec, the same every time for (split, index, seed)
    spec.terminal_task()                   # a TerminalTask: run_trial(...), the env
    spec.write(Path("tasks"))              # or a task directory in the repo format (repo.py)

How a task is made, everything drawn from Random("terminal/repo-v1|split|seed|index"):

1. A seed module (repo_seeds.py: textwrap, colorsys, fnmatch, bisect, html, graphlib for
   train and test; heapq, shlex for unseen; taken in turn by index from a place the seed
   picks, another drawn if one yields no bug) is copied from this Python's standard library,
   renamed (textwrap -> `wrapkit/__init__.py`), without its C-accelerator imports or
   `__main__` block.
2. Test calls are drawn, two per function shown in the repository (tests/test_P.py) and two
   held out (tests/test_P_more.py, which only the grader has). Each test runs its call in a
   separate process (repo_call.py) and compares with what the original module returned.
3. The module's mutation sites (mutate.py) of this split (all of them, for unseen) are
   shuffled; the original and the mutants, 8 at a time, run every call in one sandbox run
   (repo_check.py: a fresh import per call, 2 s of CPU and 384 MB each). The first mutant with
   no call that hangs, at least one shown test failing and at least one held-out test failing
   is the bug: FAIL_TO_PASS is every failing test, PASS_TO_PASS every other one.
4. The issue describes one failing shown test in a user's words (the call, what it gave,
   what was expected), never the change. The oracle writes the original file back.

Splits: train and test draw the trained seed modules (TRAINED_MODULES); a mutation site
(module, operator, place) is in the test split when its key hashes there (envs.base.split_of),
so no bug is in both. The unseen split draws only the held-out modules (UNSEEN_MODULES), at
any of their sites, so no module of it is ever trained on. `modules` picks the seed modules
instead. The same Python gives the same tasks; a different Python version's standard library
may give others.
"""

from __future__ import annotations

import ast
import difflib
import functools
import hashlib
import importlib.util
import platform
import random
from dataclasses import dataclass, field
from pathlib import Path

from tempering.envs.base import UNSEEN, split_of
from tempering.errors import TaskError

from . import mutate, repo_fix
from .repo import CATEGORY, repo_task, snapshot_build, write_repo_task
from .repo_check import evaluate
from .repo_seeds import SEEDS, TRAINED_MODULES, UNSEEN_MODULES, Seed
from .repo_text import instruction, issue_text, render_tests
from .task import TerminalTask

ENV_ID = "terminal/repo-v1"
SPLITS = ("train", "test", UNSEEN)
SHOWN_PER_FUNCTION, HELD_OUT_PER_FUNCTION = 2, 2
BATCH = 8
"""Mutants evaluated per sandbox run."""
MAX_MUTANTS = 48
"""Mutants tried for one module before drawing another."""
MAX_REPR = 600
EXPECTED_ERRORS = ("ValueError", "IndexError", "KeyError", "CycleError")
"""Exceptions the original may raise for a test to expect (shlex's unclosed quotes, graphlib's
cycles); any other means the call is not a fair test."""
HELPERS = (Path(__file__).parent / "repo_call.py").read_text()

@dataclass(frozen=True)
class Case:
    """One generated test."""

    name: str
    file: str
    """Repository path of its test file."""
    function: str
    """The package function it tests."""
    code: str
    expected: str
    """repr of what the original returns, or `Raised('Name')`."""

    @property
    def node_id(self) -> str:
        return f"{self.file}::{self.name}"


@dataclass(frozen=True)
class RepoSpec:
    """One generated repository task: everything needed to write it or run it."""

    id: str
    split: str
    seed: int
    index: int
    module: str
    package: str
    original: str = field(repr=False)
    mutated: str = field(repr=False)
    mutation: str
    """What the bug is, for people: "line 321 in TextWrapper._wrap_chunks: `<` became `<=`"."""
    site: str
    cases: tuple[Case, ...] = field(repr=False)
    fail_to_pass: tuple[str, ...]
    pass_to_pass: tuple[str, ...]
    issue: str = field(repr=False)

    @property
    def source_path(self) -> str:
        return f"{self.package}/__init__.py"

    def snapshot(self) -> dict[str, bytes]:
        """The repository as the agent finds it (mutated package, shown tests)."""
        seed = SEEDS[self.module]
        shown = [c for c in self.cases if c.file == f"tests/test_{self.package}.py"]
        readme = (f"# {self.package}\n\n{seed.about}\n\n    {self.package}/__init__.py   the package\n"
                  f"    tests/                 its tests: python tests/test_{self.package}.py (or pytest)\n")
        helpers = HELPERS.replace('PACKAGE = "package"', f"PACKAGE = {self.package!r}", 1)
        return {"README.md": readme.encode(), self.source_path: self.mutated.encode(),
                "tests/helpers.py": helpers.encode(),
                f"tests/test_{self.package}.py": render_tests(self.package, shown).encode()}

    def held_out(self) -> dict[str, bytes]:
        more = [c for c in self.cases if c.file == f"tests/test_{self.package}_more.py"]
        return {f"tests/test_{self.package}_more.py": render_tests(self.package, more).encode()}

    def solution(self) -> str:
        """The oracle: write the original file back (the reverse patch)."""
        end = "EOF_" + hashlib.sha256(self.original.encode()).hexdigest()[:16]
        return f"cat > /app/{self.source_path} <<'{end}'\n{self.original}{end}\n"

    @property
    def function(self) -> str:
        """The function that holds the bug, `Class.method` style (from `mutation`)."""
        return self.mutation.split(" in ", 1)[1].split(":", 1)[0]

    def read_command(self) -> str:
        """The shell command a person reads the bug's lines with before patching (repo_fix.py)."""
        return repo_fix.read_command(self.mutated, self.original, self.source_path)

    def patch_solution(self) -> str:
        """A fix as a person would type it: replace the bug's lines in place (repo_fix.py), or
        the whole file when no changed block occurs once in it."""
        return repo_fix.patch_command(self.mutated, self.original, self.source_path) or self.solution()

    def fix_diff(self) -> str:
        return "".join(difflib.unified_diff(self.mutated.splitlines(True), self.original.splitlines(True),
                                            f"a/{self.source_path}", f"b/{self.source_path}"))

    def config(self) -> dict:
        """task.yaml (with the solution inline; `write` puts it in solution.sh)."""
        return {
            "id": self.id, "instruction": instruction(self.package, self.issue), "category": CATEGORY,
            "difficulty": "easy", "tags": ["repo", self.module, self.site.split(":")[0]],
            "max_agent_timeout_sec": 600, "max_test_timeout_sec": 120, "issue": self.issue,
            "fail_to_pass": list(self.fail_to_pass), "pass_to_pass": list(self.pass_to_pass),
            "test_files": ["tests/helpers.py", f"tests/test_{self.package}.py"],
            "solution": self.solution(),
            "source": {"generator": ENV_ID, "module": self.module, "python": platform.python_version(),
                       "split": self.split, "seed": self.seed, "index": self.index, "site": self.site,
                       "mutation": self.mutation},
        }

    def terminal_task(self) -> TerminalTask:
        config = self.config()
        snapshot = self.snapshot()
        tests = {k: snapshot[k] for k in config["test_files"]}
        return repo_task(self.id, Path(f"<generated>/{self.id}"), config, snapshot_build(snapshot, config), tests,
                         self.held_out())

    def write(self, root: Path) -> Path:
        """Write the task directory `root/<id>` in the repo format."""
        config = self.config()
        solution = config.pop("solution")
        return write_repo_task(root / self.id, config, self.snapshot(), self.held_out(),
                               {"solution.sh": solution, "fix.diff": self.fix_diff()})


@functools.lru_cache(maxsize=None)
def seed_source(module: str) -> str:
    """The module's source from this Python's standard library, without C-accelerator
    imports (`try: from _heapq import *`) or a `__main__` block, so the Python code runs."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        raise TaskError(f"seed module {module!r} has no Python source in this standard library")
    source = Path(spec.origin).read_text()
    lines = source.splitlines(keepends=True)
    for node in reversed(ast.parse(source).body):
        accel = isinstance(node, ast.Try) and all(isinstance(s, ast.ImportFrom) and (s.module or "").startswith("_")
                                                   for s in node.body)
        main = isinstance(node, ast.If) and "__main__" in ast.unparse(node.test)
        if accel or main:
            del lines[node.lineno - 1: node.end_lineno]
    text = "".join(lines).rstrip("\n") + "\n"
    if "```" in text:
        raise TaskError(f"seed module {module!r} holds ``` (it would end the bash block of a reply)")
    return text


@functools.lru_cache(maxsize=None)
def sites(module: str) -> tuple[mutate.Site, ...]:
    return tuple(mutate.mutation_sites(seed_source(module)))


class _Rename(ast.NodeTransformer):
    def __init__(self, package: str) -> None:
        self.package = package

    def visit_Name(self, node: ast.Name) -> ast.Name:
        return ast.copy_location(ast.Name(self.package, node.ctx), node) if node.id == "P" else node


def _render(snippet: str, package: str) -> str:
    return ast.unparse(_Rename(package).visit(ast.parse(snippet)))


def draw_cases(seed: Seed, rng: random.Random) -> list[tuple[str, str, str, str]]:
    """(name, file, function, code) of every test, shown ones first."""
    out, seen = [], set()
    for file, suffix, per in ((f"tests/test_{seed.package}.py", "", SHOWN_PER_FUNCTION),
                              (f"tests/test_{seed.package}_more.py", "_more", HELD_OUT_PER_FUNCTION)):
        for fn, maker in seed.makers:
            for k in range(1, per + 1):
                for _ in range(6):
                    code = _render(maker(rng), seed.package)
                    if code not in seen:
                        break
                seen.add(code)
                out.append((f"test_{fn}{suffix}_{k}", file, fn, code))
    return out


def _literal(result: dict) -> tuple[str, object] | None:
    """("value", v) or ("raised", name) when `result` can be a test's expectation."""
    if "raised" in result:
        return ("raised", result["raised"]) if result["raised"] in EXPECTED_ERRORS else None
    text = result.get("value")
    if text is None or len(text) > MAX_REPR:
        return None
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return ("value", value) if repr(value) == text else None


def _same(result: dict, expected: tuple[str, object]) -> bool:
    """What the test helper's `expect` decides (repo_call.py), from an evaluation result."""
    if "raised" in result:
        return expected == ("raised", result["raised"])
    if "value" not in result or expected[0] != "value":
        return False
    try:
        return ast.literal_eval(result["value"]) == expected[1]
    except Exception:  # noqa: BLE001 (any value that does not read back is not the expected one)
        return False


def generate(split: str, index: int, seed: int = 0, modules: tuple[str, ...] | None = None, sandbox=None) -> RepoSpec:
    """The `index`-th task of `split` for `seed` (see the module docstring)."""
    if split not in SPLITS:
        raise TaskError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    pool = sorted(modules or (UNSEEN_MODULES if split == UNSEEN else TRAINED_MODULES))
    unknown = sorted(set(pool) - set(SEEDS))
    if unknown:
        raise TaskError(f"no seed module {', '.join(unknown)}; there are {', '.join(SEEDS)}")
    if sandbox is None:
        from tempering.sandbox import shared_sandbox

        sandbox = shared_sandbox()
    rng = random.Random(f"{ENV_ID}|{split}|{seed}|{index}")
    # modules in turn (from a place the seed picks), so any n tasks spread evenly over them
    first = pool[(random.Random(f"{ENV_ID}|{split}|{seed}").randrange(len(pool)) + index) % len(pool)]
    for attempt in range(8):
        spec = _try_module(SEEDS[first if attempt == 0 else rng.choice(pool)], rng, split, seed, index, sandbox)
        if spec is not None:
            return spec
    raise TaskError(f"no verified bug found for {split} task {index} (seed {seed}) in {', '.join(pool)}")


def _try_module(seed: Seed, rng: random.Random, split: str, seed_n: int, index: int, sandbox) -> RepoSpec | None:
    original = seed_source(seed.module)
    drawn = draw_cases(seed, rng)
    candidates = [s for s in sites(seed.module) if split == UNSEEN or split_of(f"{seed.module}:{s.key}") == split]
    rng.shuffle(candidates)
    codes = [code for *_, code in drawn]
    expected: list[tuple[str, object] | None] | None = None
    pending = iter(candidates)
    tried = 0
    while tried < MAX_MUTANTS:
        batch = []
        for site in pending:
            m = mutate.apply(original, site)
            if m is not None:
                batch.append(m)
            if len(batch) == BATCH:
                break
        if not batch:
            return None
        tried += len(batch)
        sources = {f"m{i}": m.source for i, m in enumerate(batch)}
        if expected is None:
            sources = {"original": original, **sources}
        results = evaluate(seed.package, sources, codes, sandbox)
        if expected is None:
            if results.get("original") is None:
                raise TaskError(f"the original {seed.module} did not run its cases in the sandbox")
            expected = [_literal(r) for r in results["original"]]
            if sum(e is None for e in expected) * 2 > len(expected):
                bad = next(r for r, e in zip(results["original"], expected) if e is None)
                raise TaskError(f"the original {seed.module} fails most of its generated calls here (e.g. {bad})")
        for i, m in enumerate(batch):
            spec = _verdict(seed, m, drawn, expected, results.get(f"m{i}"), rng, split, seed_n, index, original)
            if spec is not None:
                return spec
    return None


def _verdict(seed: Seed, mutant: mutate.Mutant, drawn, expected, results, rng, split, seed_n, index,
             original) -> RepoSpec | None:
    """The task `mutant` makes, or None when it is not a verified bug."""
    if results is None or len(results) != len(drawn) or any("hang" in r for r in results):
        return None
    cases, failing = [], []
    for (name, file, fn, code), exp, got in zip(drawn, expected, results):
        if exp is None:  # the original's result cannot be written as an expectation: no test
            continue
        case = Case(name, file, fn, code, f"Raised({exp[1]!r})" if exp[0] == "raised" else repr(exp[1]))
        cases.append(case)
        if not _same(got, exp):
            failing.append((case, got))
    shown = [(c, got) for c, got in failing if not c.file.endswith("_more.py")]
    if not shown or len(shown) == len(failing):
        return None
    failed = {c.node_id for c, _ in failing}
    case, got = rng.choice(shown)
    task_id = f"{seed.module}-{split}-{index:04d}" + (f"-s{seed_n}" if seed_n else "")
    return RepoSpec(task_id, split, seed_n, index, seed.module, seed.package, original, mutant.source,
                    mutant.description, mutant.site.key, tuple(cases),
                    tuple(c.node_id for c in cases if c.node_id in failed),
                    tuple(c.node_id for c in cases if c.node_id not in failed),
                    issue_text(rng, seed.package, case, got))
