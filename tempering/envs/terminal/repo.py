"""Repository tasks (SWE-style): a repository snapshot, an issue, and the tests that decide.

A repo task is a native task (see task.py) whose task.yaml lists `fail_to_pass` (tests that
fail before the fix) and optionally `pass_to_pass` (tests that must keep passing), as pytest
node ids relative to the repository root:

    task.yaml    instruction (the issue, and where the repository is), fail_to_pass,
                 pass_to_pass, solution (the oracle: the reverse patch), optional test_files,
                 issue, source, and the native keys (setup, env, timeouts, ...)
    files/       the repository snapshot, copied to /app
    held_out/    optional test files only the grader has, at their repository paths
                 (held_out/tests/test_x_more.py is tests/test_x_more.py); the agent never sees them

It runs through the same runner and judge as every terminal task. What changes is which
tests run: the grader's tests are the snapshot's own test files as they were in the
snapshot (`test_files`, default: everything under a tests/ directory, and test_*.py,
*_test.py and conftest.py files anywhere) plus the held-out files, copied into the fresh
/tests only after the agent is done. So an agent's edits to the tests in /app are never
read (the tests are, in effect, restored), test files it adds are not run, and pytest runs
exactly the listed node ids. The task passes only when every one of them passes; the
verdict counts FAIL_TO_PASS and PASS_TO_PASS separately.
"""

from __future__ import annotations

import fnmatch
from dataclasses import replace
from pathlib import Path

import yaml

from tempering.errors import TaskError

from .dockerfile import ROOT, Build, Step
from .scoring import TestOutcome
from .task import RepoTests, TerminalTask, _native_build, _number, _solution

CATEGORY = "repository"
TEST_PATTERNS = ("tests/*", "*/tests/*", "test_*.py", "*/test_*.py", "*_test.py", "*/*_test.py", "conftest.py",
                 "*/conftest.py")
"""Snapshot files that count as tests when task.yaml has no `test_files`."""


def is_test_file(path: str) -> bool:
    return any(fnmatch.fnmatchcase(path, p) for p in TEST_PATTERNS)


def case_key(node_id: str) -> str:
    """The `classname::name` key the judge gives the JUnit case of a pytest node id
    (`tests/test_x.py::TestA::test_b` -> `tests.test_x.TestA::test_b`)."""
    path, *parts = node_id.split("::")
    module = path[:-3] if path.endswith(".py") else path
    return ".".join([module.replace("/", "."), *parts[:-1]]) + "::" + (parts[-1] if parts else "")


def node_name(node_id: str) -> str:
    """The name the judge expects among the passed cases (`TestA.test_b`, `test_b`)."""
    parts = node_id.split("::")[1:]
    name = ".".join(parts).split("[", 1)[0]
    return name if len(parts) > 1 and parts[0].startswith("Test") else name.rsplit(".", 1)[-1]


def _node_ids(config: dict, key: str, path: Path) -> tuple[str, ...]:
    value = config.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) and "::" in v for v in value):
        raise TaskError(f"{path}: `{key}` must be a list of pytest node ids like tests/test_x.py::test_y")
    return tuple(value)


def repo_task(task_id: str, path: Path, config: dict, build: Build, snapshot_tests: dict[str, bytes],
              held_out: dict[str, bytes]) -> TerminalTask:
    """The TerminalTask of a repo task: `snapshot_tests` are the snapshot's test files,
    `held_out` the grader-only ones, both by repository path."""
    where = path / "task.yaml"
    instruction = config.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskError(f"{where}: `instruction` must be non-empty text")
    f2p, p2p = _node_ids(config, "fail_to_pass", where), _node_ids(config, "pass_to_pass", where)
    if not f2p:
        raise TaskError(f"{where}: `fail_to_pass` must list at least one test")
    tests = {**snapshot_tests, **held_out}
    missing = sorted({n.split("::")[0] for n in f2p + p2p} - set(tests))
    problem = f"test files {missing} are in neither the snapshot's tests nor held_out/" if missing else None
    return TerminalTask(
        id=str(config.get("id") or path.name), path=path, format="repo", instruction=instruction,
        category=str(config.get("category", CATEGORY)), difficulty=str(config.get("difficulty", "unknown")),
        max_agent_timeout_sec=_number(config, "max_agent_timeout_sec", 600.0, path),
        max_test_timeout_sec=_number(config, "max_test_timeout_sec", 120.0, path),
        build=build, tests=tests, test_targets=f2p + p2p, expected_tests=tuple(dict.fromkeys(map(node_name, f2p + p2p))),
        solution=_solution(path, config), tags=tuple(str(t) for t in config.get("tags") or ()), config=config,
        problem=problem, repo=RepoTests(f2p, p2p))


def load_repo_task(task_dir: Path, config: dict) -> TerminalTask:
    """Read a repo task directory (see the module docstring)."""
    files = task_dir / "files"
    if not files.is_dir():
        raise TaskError(f"{task_dir}: a repo task needs files/ (the repository snapshot, copied to {ROOT})")
    snapshot = sorted(p.relative_to(files).as_posix() for p in files.rglob("*")
                      if p.is_file() and "__pycache__" not in p.parts)
    listed = config.get("test_files")
    if listed is not None and (not isinstance(listed, list) or not set(map(str, listed)) <= set(snapshot)):
        raise TaskError(f"{task_dir / 'task.yaml'}: `test_files` must list files under files/")
    names = [str(t) for t in listed] if listed is not None else [p for p in snapshot if is_test_file(p)]
    held = task_dir / "held_out"
    held_out = ({p.relative_to(held).as_posix(): p.read_bytes() for p in sorted(held.rglob("*"))
                 if p.is_file() and "__pycache__" not in p.parts} if held.is_dir() else {})
    return repo_task(str(config.get("id") or task_dir.name), task_dir, config, _native_build(task_dir, config),
                     {n: (files / n).read_bytes() for n in names}, held_out)


def snapshot_build(snapshot: dict[str, bytes], config: dict | None = None) -> Build:
    """A build that writes `snapshot` (repository path -> bytes) to /app: the in-memory
    equivalent of files/ for generated tasks."""
    env = tuple((str(k), str(v)) for k, v in ((config or {}).get("env") or {}).items())
    return Build("host", ROOT, env, (Step("repository snapshot", "true", files=dict(snapshot), env=env),))


def write_repo_task(out: Path, config: dict, snapshot: dict[str, bytes], held_out: dict[str, bytes],
                    extra: dict[str, str] | None = None) -> Path:
    """Write a repo task directory: task.yaml, files/ (the snapshot), held_out/, and `extra`
    files beside them (solution.sh; fix.diff, for people)."""
    out.mkdir(parents=True, exist_ok=False)
    (out / "task.yaml").write_text(yaml.dump(config, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100))
    for root, files in (("files", snapshot), ("held_out", held_out)):
        for rel, data in files.items():
            dest = out / root / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
    for name, text in (extra or {}).items():
        (out / name).write_text(text)
    return out


class _Dumper(yaml.SafeDumper):
    """Multi-line text as literal blocks, so task.yaml reads like the issue it holds."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s
                                                            else None))


def counted(outcome: TestOutcome, repo: RepoTests) -> TestOutcome:
    """`outcome` with FAIL_TO_PASS and PASS_TO_PASS counted (passed, total) and said first."""
    counts = {}
    for name, ids in (("fail_to_pass", repo.fail_to_pass), ("pass_to_pass", repo.pass_to_pass)):
        counts[name] = [sum(outcome.tests.get(case_key(n)) == "passed" for n in ids), len(ids)]
    f, p = counts["fail_to_pass"], counts["pass_to_pass"]
    head = f"FAIL_TO_PASS {f[0]}/{f[1]}, PASS_TO_PASS {p[0]}/{p[1]} passed"
    return replace(outcome, reason=f"{head}; {outcome.reason}", counts=counts)
