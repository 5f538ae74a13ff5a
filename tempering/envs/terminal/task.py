"""Terminal tasks: Terminal-Bench 1 task directories read as they are, and a native format.

A TB1 task directory holds task.yaml (instruction and settings), a Dockerfile (the image),
run-tests.sh plus tests/ (the checks, copied in only when the agent is done), and a
reference solution (solution.sh, or solution.yaml: a list of commands typed in order).
A native task (no Dockerfile) holds task.yaml with `instruction`, optional `setup`,
`solution`, `env`, `requires` and `tests` keys, an optional files/ directory copied to
/app, and tests/ (see docs/terminal.md). A native task whose task.yaml lists `fail_to_pass`
is a repository task (repo.py).

`load_task` only reads files: nothing of the task runs in this process, and what the host
must provide is recorded as `Need`s that `runner.TaskSession` checks in the sandbox.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tempering.errors import TaskError

from . import dockerfile
from .commands import classify, requirement_lines, shorten, split_commands
from .dockerfile import ROOT, Build
from .host import Need

DEFAULT_AGENT_TIMEOUT_S = 360.0
DEFAULT_TEST_TIMEOUT_S = 60.0
INSTALLER_ONLY = {"curl"}
"""apt packages TB's run-tests.sh installs only to fetch uv, which the offline runner replaces."""
_TARGET = re.compile(r"(?:\$\{?TEST_DIR\}?|/tests)/([\w./-]+\.py)")


@dataclass(frozen=True)
class RepoTests:
    """What decides a repository task (repo.py): pytest node ids, relative to the repository."""

    fail_to_pass: tuple[str, ...]
    """Fail on the snapshot as given; must pass after the agent's fix."""
    pass_to_pass: tuple[str, ...] = ()
    """Pass on the snapshot; must still pass."""


@dataclass(frozen=True)
class TerminalTask:
    """One task, as read from its directory."""

    id: str
    path: Path
    format: str
    """"tb1" (Terminal-Bench 1 directory), "native", or "repo" (a repository task, repo.py)."""
    instruction: str
    category: str
    difficulty: str
    max_agent_timeout_sec: float
    max_test_timeout_sec: float
    build: Build
    tests: dict[str, bytes] = field(repr=False)
    """tests/ contents by relative path; copied to /tests only after the agent is done."""
    test_targets: tuple[str, ...]
    """Files under tests/ that pytest runs."""
    expected_tests: tuple[str, ...] = ()
    """Test function names found in the targets: each must appear in the result, passed."""
    test_needs: tuple[Need, ...] = ()
    solution: str | None = field(default=None, repr=False)
    """The reference solution as one bash script; None when the task ships none."""
    tags: tuple[str, ...] = ()
    config: dict = field(default_factory=dict, repr=False)
    """task.yaml as read."""
    problem: str | None = None
    """Why the task cannot run without Docker whatever the host has; None when it can."""
    notes: tuple[str, ...] = ()
    repo: RepoTests | None = None
    """For repository tasks: the FAIL_TO_PASS and PASS_TO_PASS node ids (the test targets)."""

    @property
    def needs(self) -> tuple[Need, ...]:
        return self.build.needs + self.test_needs

    @property
    def workdir(self) -> str:
        return self.build.workdir


def _yaml(path: Path) -> dict:
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as e:
        raise TaskError(f"{path}: not readable YAML ({e})") from None
    if not isinstance(data, dict):
        raise TaskError(f"{path}: expected a mapping with at least an `instruction` key")
    return data


def _read_tests(task_dir: Path) -> dict[str, bytes]:
    tests = task_dir / "tests"
    if not tests.is_dir():
        return {}
    return {p.relative_to(tests).as_posix(): p.read_bytes() for p in sorted(tests.rglob("*"))
            if p.is_file() and "__pycache__" not in p.parts}


def expected_test_names(source: str) -> tuple[str, ...]:
    """Test functions pytest would collect from `source`: top-level `test_*` functions and
    `test_*` methods of `Test*` classes (read with ast; nothing is executed)."""
    try:
        with warnings.catch_warnings():  # the task's own style (e.g. invalid escapes) is not ours to report
            warnings.simplefilter("ignore")
            tree = ast.parse(source)
    except SyntaxError:
        return ()
    names = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test"):
            names.append(node.name)
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            names += [f"{node.name}.{n.name}" for n in node.body
                      if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name.startswith("test")]
    return tuple(names)


def _test_scripts(task_dir: Path, tests: dict[str, bytes]) -> list[tuple[str, str]]:
    run_tests = task_dir / "run-tests.sh"
    scripts = [("run-tests.sh", run_tests.read_text())] if run_tests.is_file() else []
    return scripts + [(f"tests/{k}", v.decode(errors="replace")) for k, v in tests.items() if k.endswith(".sh")]


def _test_plan(task_dir: Path, tests: dict[str, bytes]) -> tuple[tuple[str, ...], tuple[Need, ...], str | None]:
    """(pytest targets, test-time needs, problem) from run-tests.sh and the scripts it sources.
    Their install lines are not run: pytest comes from the host; anything else they
    install must already be here."""
    targets: list[str] = []
    needs: list[Need] = []
    for name, text in _test_scripts(task_dir, tests):
        for line in text.splitlines():
            if line.lstrip().startswith("#"):
                continue
            if re.search(r"\bpytest\b", line):
                targets += [t for t in _TARGET.findall(line) if t in tests and t not in targets]
            for piece, _ in split_commands(line) or [(line, "")]:
                cmd = classify(piece)
                origin = shorten(f"{name}: {piece}")
                if cmd.kind == "apt":
                    needs += [Need("apt", p, origin) for p in cmd.names if p not in INSTALLER_ONLY]
                elif cmd.kind == "python":
                    needs += [Need("python", p, origin) for p in cmd.names]
                elif cmd.kind == "requirements-file":
                    req = next((k for k in tests if k.endswith(cmd.names[0].rsplit("/", 1)[-1])), None)
                    if req is None:
                        return (), (), f"{origin}: the requirements file is not in tests/"
                    needs += [Need("python", r, origin) for r in requirement_lines(tests[req].decode())]
                elif cmd.kind == "manager":
                    return (), (), f"{origin}: the tests install with {cmd.names[0]}, which this runner cannot"
    if not targets:
        targets = [k for k in tests if re.fullmatch(r"test_[\w-]*\.py", k)]
    if not targets:
        return (), (), "no pytest test files (tests/test_*.py) to score the task with"
    return tuple(targets), tuple(needs), None


def _solution(task_dir: Path, config: dict) -> str | None:
    if isinstance(config.get("solution"), str):
        return config["solution"]
    if (task_dir / "solution.sh").is_file():
        return (task_dir / "solution.sh").read_text()
    if (task_dir / "solution.yaml").is_file():
        steps = yaml.safe_load((task_dir / "solution.yaml").read_text()) or []
        if not isinstance(steps, list) or not all(isinstance(s, dict) and "command" in s for s in steps):
            raise TaskError(f"{task_dir / 'solution.yaml'}: expected a list of {{command: ...}} items")
        # Typed into one terminal one after another: the same as one bash script.
        return "".join(str(s["command"]).rstrip("\n") + "\n" for s in steps)
    return None


def _compose_problem(task_dir: Path) -> str | None:
    path = task_dir / "docker-compose.yaml"
    if not path.is_file():
        path = task_dir / "docker-compose.yml"
    if not path.is_file():
        return None
    services = (_yaml(path).get("services") or {})
    extra = sorted(s for s in services if s != "client")
    if extra:
        return f"docker-compose.yaml runs more services ({', '.join(extra)}), which need Docker"
    return None


def _number(config: dict, key: str, default: float, path: Path) -> float:
    value = config.get(key, default)
    if not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0:
        raise TaskError(f"{path}: {key} must be a positive number of seconds, got {value!r}")
    return float(value)


def _native_build(task_dir: Path, config: dict) -> Build:
    """A native task's build: files/ copied to /app, then its setup script."""
    lines = ["FROM host"]
    if (task_dir / "files").is_dir():
        lines.append(f"COPY files/ {ROOT}/")
    build = dockerfile.interpret(dockerfile.parse("\n".join(lines)), task_dir)
    env = tuple((str(k), str(v)) for k, v in (config.get("env") or {}).items())
    setup = config.get("setup")
    if setup is None and (task_dir / "setup.sh").is_file():
        setup = (task_dir / "setup.sh").read_text()
    steps = build.steps + ((dockerfile.Step("setup", str(setup), env=env),) if setup else ())
    requires = config.get("requires") or {}
    needs = tuple(Need("command", str(p), "requires.programs") for p in requires.get("programs", ()))
    needs += tuple(Need("python", str(p), "requires.python") for p in requires.get("python", ()))
    needs += tuple(Need("apt", str(p), "requires.apt") for p in requires.get("apt", ()))
    return Build("host", ROOT, env, steps, needs, build.notes, build.problem)


def load_task(task_dir: str | Path) -> TerminalTask:
    """Read one task directory (TB1 when it has a Dockerfile, else native)."""
    task_dir = Path(task_dir)
    if not (task_dir / "task.yaml").is_file():
        raise TaskError(f"{task_dir}: no task.yaml; a task directory holds task.yaml, tests/ and, for "
                        f"Terminal-Bench tasks, a Dockerfile (see docs/terminal.md)")
    config = _yaml(task_dir / "task.yaml")
    instruction = config.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        raise TaskError(f"{task_dir / 'task.yaml'}: `instruction` must be non-empty text")
    is_tb = (task_dir / "Dockerfile").is_file()
    if not is_tb and "fail_to_pass" in config:
        from .repo import load_repo_task

        return load_repo_task(task_dir, config)
    if is_tb:
        build = dockerfile.interpret(dockerfile.parse((task_dir / "Dockerfile").read_text()), task_dir)
    else:
        build = _native_build(task_dir, config)
    tests = _read_tests(task_dir)
    if not is_tb and isinstance(config.get("tests"), list):
        targets, test_needs, problem = tuple(str(t) for t in config["tests"]), (), None
        missing = [t for t in targets if t not in tests]
        problem = f"tests {missing} are not in tests/" if missing else None
    else:
        targets, test_needs, problem = _test_plan(task_dir, tests)
    parser = config.get("parser_name", "pytest")
    problem = (build.problem or (f"parser_name {parser!r}: only pytest results can be scored" if parser != "pytest"
                                 else None) or (_compose_problem(task_dir) if is_tb else None) or problem)
    notes = list(build.notes)
    if config.get("run_tests_in_same_shell"):
        notes.append("run_tests_in_same_shell: tests run in a fresh shell here")
    expected = tuple(n for t in targets for n in expected_test_names(tests[t].decode(errors="replace"))) \
        if not problem else ()
    return TerminalTask(
        id=str(config.get("id") or task_dir.name), path=task_dir, format="tb1" if is_tb else "native",
        instruction=instruction, category=str(config.get("category", "uncategorized")),
        difficulty=str(config.get("difficulty", "unknown")),
        max_agent_timeout_sec=_number(config, "max_agent_timeout_sec", DEFAULT_AGENT_TIMEOUT_S, task_dir),
        max_test_timeout_sec=_number(config, "max_test_timeout_sec", DEFAULT_TEST_TIMEOUT_S, task_dir),
        build=build, tests=tests, test_targets=targets, expected_tests=expected, test_needs=test_needs,
        solution=_solution(task_dir, config), tags=tuple(str(t) for t in config.get("tags") or ()), config=config,
        problem=problem, notes=tuple(notes))


def load_tasks(path: str | Path, only: tuple[str, ...] = ()) -> list[TerminalTask]:
    """Every task under `path` (a task directory, or a directory of them), sorted by id;
    `only` keeps the named ids."""
    path = Path(path)
    if not path.is_dir():
        raise TaskError(f"no such task directory: {path} (give a task directory or a directory of them)")
    is_task = lambda p: (p / "task.yaml").is_file()  # noqa: E731
    dirs = [path] if is_task(path) else sorted(p for p in path.iterdir() if is_task(p))
    if not dirs:
        raise TaskError(f"{path}: no task directories (each holds a task.yaml)")
    tasks = [load_task(d) for d in dirs]
    if only:
        unknown = sorted(set(only) - {t.id for t in tasks})
        if unknown:
            raise TaskError(f"no task named {', '.join(unknown)} under {path}; there are: "
                            f"{', '.join(t.id for t in tasks)}")
        tasks = [t for t in tasks if t.id in only]
    return tasks
