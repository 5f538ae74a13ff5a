"""`code/repo-function-v1`: the repository tasks' easier rung, one function with its failing
test shown.

The bugs are `terminal/repo-v1`'s (repo_gen.py): task `i` of a split is the same bug in the
same generated repository. Only the presentation is smaller. The prompt shows the one
function that holds the bug (repo_unit.py), one failing test's source, and what running that
test printed. The test is run in the sandbox against the buggy package when the task is made.
The reply is the fixed function in one ```python block:

    env = envs.make("code/repo-function-v1", max_turns=2)
    task = env.task("train", 0)
    env.verify(task, env.reference_response(task)).value      # 1.0: the original function

Grading is the full task's own (runner.TaskSession.test). The reply's function replaces the
buggy one in the package, and the repository's FAIL_TO_PASS and PASS_TO_PASS tests run in the
sandbox, held-out ones included. `passed` is the full task's verdict: every test passes. The
reward (`reward`):

    fixed   (default) FAIL_TO_PASS passing / FAIL_TO_PASS, times PASS_TO_PASS still passing /
            PASS_TO_PASS. Writing the buggy function back scores 0; a partial fix earns part.
    tests   all tests passing / all tests. Writing the buggy function back already earns
            PASS_TO_PASS / all (0.44, 0 and 0.5 on train tasks 0 to 2).
    binary  1 when every test passes, else 0 (the full task's reward)

With `max_turns` above 1, a failing reply is told what the repository's test file printed
against it (`python tests/test_P.py`: its failures in full) and may try again. Hidden tests
are never shown, only how many still fail. The episode's reward is the last reply's.
Splits are repo-v1's: `train` and `test` split the trained modules' bugs by mutation site;
`unseen` draws only the held-out modules.
"""

from __future__ import annotations

import ast
import functools
import re
import shlex
from dataclasses import dataclass, replace

from tempering.envs.base import UNSEEN
from tempering.envs.context import compress
from tempering.envs.infra import INFRA_STATUS, is_infra_failure
from tempering.errors import TaskError
from tempering.types import Message, Score, StepResult, Task

from .env import clip
from .repo_env import SPLIT_SIZE, trained_modules
from .repo_gen import SPLITS, RepoSpec, generate
from .repo_seeds import SEEDS, UNSEEN_MODULES
from .repo_unit import Unit, bug_unit, function_in, splice
from .runner import TaskSession

ENV_ID = "code/repo-function-v1"
REWARDS = ("fixed", "tests", "binary")
RUN_S = 60.0
"""Time limit for running the shown test file (each call in it is capped at 5 s by the helpers)."""
_RESULT = re.compile(r"^(PASSED|FAILED) (\w+)$")


@dataclass(frozen=True)
class FunctionTask:
    """A repository task presented as one function (Task.reference of this env)."""

    spec: RepoSpec
    unit: Unit
    """The function that holds the bug, in `spec.mutated`."""
    fixed: Unit
    """The same function in `spec.original`."""
    test: str
    """The failing test shown (a FAIL_TO_PASS node id of the repository's own test file)."""
    test_source: str
    failure: str
    """What running the shown test against the buggy package printed."""

    @property
    def id(self) -> str:
        """The repository task's id (repo_gen: `bisect-train-0000`)."""
        return self.spec.id

    @property
    def shown(self) -> str:
        return self.unit.text(self.spec.mutated)

    @property
    def reference(self) -> str:
        return self.fixed.text(self.spec.original)


def prompt_text(ft: FunctionTask) -> str:
    spec, unit = ft.spec, ft.unit
    about = SEEDS[spec.module].about.rstrip(".")
    where = f"the method `{unit.name}` of class `{unit.owner}`" if unit.owner else f"the function `{unit.name}`"
    return (f"The Python package `{spec.package}` ({about[0].lower() + about[1:]}) has a bug in {where}, "
            f"in {spec.source_path}:\n\n```python\n{ft.shown}```\n\n"
            f"This test from tests/test_{spec.package}.py fails (`expect(code, expected)` runs `code` with "
            f"`{spec.package}` imported and checks that it returns `expected`):\n\n```python\n{ft.test_source}\n```\n\n"
            f"Running it printed:\n\n```\n{ft.failure}\n```\n\n"
            f"Fix the bug. Reply with the whole fixed `{unit.name}` in one ```python block: it replaces the one "
            f"in the package, and more tests, some of them hidden, check it.")


def reward_of(counts: dict, passed: bool, kind: str) -> float:
    """The reward of a graded reply, from the judge's counts ({"fail_to_pass": [passed, total],
    "pass_to_pass": [...]}) and verdict (see the module docstring).

    >>> reward_of({"fail_to_pass": [1, 4], "pass_to_pass": [6, 6]}, False, "fixed")
    0.25
    >>> reward_of({"fail_to_pass": [0, 4], "pass_to_pass": [6, 6]}, False, "tests")
    0.6
    """
    if passed:
        return 1.0
    if kind == "binary" or not counts:
        return 0.0
    (f, nf), (p, np_) = counts["fail_to_pass"], counts["pass_to_pass"]
    if kind == "tests":
        return (f + p) / (nf + np_)
    return f / nf * (p / np_ if np_ else 1.0)


def _test_source(spec: RepoSpec, name: str) -> str:
    text = spec.snapshot()[f"tests/test_{spec.package}.py"].decode()
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(text, node) or ""


def run_shown_tests(session: TaskSession, spec: RepoSpec, only: str | None = None) -> str:
    """What the repository's test file prints (`python tests/test_P.py`, or its test `only`)."""
    module = f"test_{spec.package}"
    if only is None:
        command = f"cd /app && python {shlex.quote(f'tests/{module}.py')}"
    else:
        code = f"import {module} as t; t.main({{{only!r}: t.{only}}})"
        command = f"cd /app/tests && python -c {shlex.quote(code)}"
    return session.run(command, RUN_S).output.strip()


def make_task(spec: RepoSpec, sandbox) -> FunctionTask:
    """The function rung of `spec`: its bug's function, and the first failing test of the
    repository's own test file, run against the buggy package for what it prints."""
    unit, fixed = bug_unit(spec.mutated, spec.original)
    shown_file = f"tests/test_{spec.package}.py::"
    test = next(n for n in spec.fail_to_pass if n.startswith(shown_file))  # the generator guarantees one
    name = test.split("::")[1]
    with TaskSession(spec.terminal_task(), sandbox) as session:
        problem = session.build()
        if problem:
            raise TaskError(f"{spec.id}: {problem}")
        failure = run_shown_tests(session, spec, only=name)
    if not failure.startswith(f"FAILED {name}\n"):
        raise TaskError(f"{spec.id}: {name} did not fail against the buggy package: {failure[-300:]}")
    return FunctionTask(spec, unit, fixed, test, _test_source(spec, name), failure)


def feedback(output: str, package: str, counts: dict, shown_failures: int = 2) -> str:
    """What a failed reply is told: the test file's first failures and its summary line
    (from `output`, what it printed), or, when it passes, how many hidden tests still fail."""
    blocks, current = [], None
    for line in output.splitlines():
        m = _RESULT.match(line)
        if m:
            current = [line] if m.group(1) == "FAILED" else None
            if current is not None:
                blocks.append(current)
        elif current is not None and re.fullmatch(r"\d+ passed, \d+ failed", line) is None:
            current.append(line)
    summary = output.strip().splitlines()[-1] if output.strip() else "no output"
    file = f"tests/test_{package}.py"
    if blocks:
        shown = "\n\n".join("\n".join(b).strip() for b in blocks[:shown_failures])
        return (f"With your function, {file} still fails ({summary}):\n\n```\n{shown}\n```\n\n"
                "Fix the function and reply with the whole function again.")
    if not re.fullmatch(r"\d+ passed, 0 failed", summary):
        return f"With your function, {file} did not run through:\n\n```\n{output}\n```"
    hidden = sum(t - p for p, t in counts.values()) if counts else 0
    many = "some hidden tests still fail" if not hidden else "1 hidden test still fails" if hidden == 1 else \
        f"{hidden} hidden tests still fail"
    return (f"With your function, {file} passes ({summary}), but {many}: some other inputs still go wrong. "
            "Reply with the whole function again.")


class RepoFunctionEnv:
    """See the module docstring. `modules` restricts the trained seed modules (as for
    terminal/repo-v1); `seed` picks another stream of tasks; `test_timeout_s` caps one
    grading run (a reply that loops would otherwise hold it for every test's 5 s)."""

    id = ENV_ID
    domain = "code"
    splits = SPLITS
    concurrent_verify = True
    turns_optional = True
    """At max_turns=1 an episode is one graded answer (protocols.episodic)."""

    def __init__(self, max_turns: int = 1, reward: str = "fixed", modules: tuple[str, ...] | None = None,
                 seed: int = 0, test_timeout_s: float = 60.0, output_chars: int = 3000, sandbox=None) -> None:
        if max_turns < 1:
            raise TaskError(f"max_turns must be at least 1, got {max_turns}")
        if reward not in REWARDS:
            raise TaskError(f"reward must be one of {', '.join(REWARDS)}, got {reward!r}")
        self.max_turns, self.reward, self.seed = max_turns, reward, seed
        self.modules = trained_modules(modules, ENV_ID)
        self.families, self.unseen_families = self.modules, UNSEEN_MODULES
        self.test_timeout_s, self.output_chars = test_timeout_s, output_chars
        self._sandbox = sandbox
        self._task: Task | None = None
        self._turn = 0
        self._history: list[Message] = []

    @property
    def sandbox(self):
        if self._sandbox is None:
            from tempering.sandbox import shared_sandbox

            self._sandbox = shared_sandbox()
        return self._sandbox

    # -- tasks

    def size(self, split: str) -> int:
        return SPLIT_SIZE if split in self.splits else 0

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        if split not in self.splits:
            raise TaskError(f"unknown split {split!r} for {ENV_ID}: use one of {', '.join(self.splits)}")
        known = self.unseen_families if split == UNSEEN else self.families
        if family is not None and family not in known:
            raise TaskError(f"{ENV_ID} has no family {family!r} in split {split}; families: {', '.join(known)}")
        return self._task_at(split, index, family)

    def tasks(self, split: str, n: int, start: int = 0) -> list[Task]:
        return [self.task(split, i) for i in range(start, start + n)]

    @functools.lru_cache(maxsize=256)  # noqa: B019 (one env per run; a task costs sandbox runs to make)
    def _task_at(self, split: str, index: int, family: str | None) -> Task:
        modules = (family,) if family else self.unseen_families if split == UNSEEN else self.modules
        ft = make_task(generate(split, index, self.seed, modules, self.sandbox), self.sandbox)
        spec = ft.spec
        return Task(id=f"{ENV_ID}/{split}/{index}" + (f"/{family}" if family else ""), domain=self.domain,
                    prompt=(Message("user", prompt_text(ft)),), reference=ft,
                    metadata={"family": spec.module, "module": spec.module, "repo_task": spec.id,
                              "function": ft.unit.qualname, "lines": ft.unit.last - ft.unit.first + 1,
                              "fail_to_pass": len(spec.fail_to_pass), "pass_to_pass": len(spec.pass_to_pass)})

    def reference_response(self, task: Task) -> str:
        return f"```python\n{task.reference.reference}```"

    def broken_response(self, task: Task) -> str:
        """The buggy function written back unchanged."""
        return f"```python\n{task.reference.shown}```"

    # -- grading

    def verify(self, task: Task, response: str) -> Score:
        return self.attempt(task, response)

    def attempt(self, task: Task, response: str, feedback_wanted: bool = False) -> Score:
        """`response` graded by the repository's tests; with `feedback_wanted`, a failing one
        also gets `Score.feedback` (the shown test file run against it)."""
        ft: FunctionTask = task.reference
        text, problem = function_in(response, ft.unit.name)
        if text is None:
            return Score(0.0, False, {"status": "no_function"}, feedback=problem, format_ok=False)
        module = splice(ft.spec.mutated, ft.unit, text)
        try:
            ast.parse(module)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
            return Score(0.0, False, {"status": "syntax_error"}, format_ok=True,
                         feedback=f"Your function does not fit in the package: {type(e).__name__}: {e}.")
        repo = replace(replace(ft.spec, mutated=module).terminal_task(), max_test_timeout_sec=self.test_timeout_s)
        with TaskSession(repo, self.sandbox) as session:
            problem = session.build()
            if problem:  # writing a snapshot fails only when the sandbox does
                return Score(0.0, False, {"status": INFRA_STATUS, "sandbox_status": INFRA_STATUS, "reason": problem})
            outcome = session.test()
            note = None
            if feedback_wanted and not outcome.passed and outcome.sandbox_status != INFRA_STATUS:
                note = clip(feedback(run_shown_tests(session, ft.spec), ft.spec.package, outcome.counts), self.output_chars)
        details = {"status": "passed" if outcome.passed else "tests_failed", "counts": outcome.counts,
                   "reason": outcome.reason}
        if outcome.sandbox_status == INFRA_STATUS:  # the tests never ran: no verdict on the reply (envs/infra.py)
            details["sandbox_status"] = INFRA_STATUS
        return Score(reward_of(outcome.counts, outcome.passed, self.reward), outcome.passed, details, feedback=note,
                     format_ok=True)

    # -- the episode

    def reset(self, task: Task) -> list[Message]:
        self._task, self._turn = task, 0
        self._history = list(task.prompt)
        return list(task.prompt)

    def context_messages(self, count_tokens, budget: int) -> list[Message]:
        """The conversation so far in at most `budget` tokens (envs.context.compress)."""
        return compress(self._history, count_tokens, budget)

    def step(self, action: str) -> StepResult:
        if self._task is None:
            raise TaskError(f"env {self.id}: call reset(task) before step(action)")
        self._turn += 1
        last = self._turn >= self.max_turns
        score = self.attempt(self._task, action, feedback_wanted=not last)
        info = {"turn": self._turn, "passed": score.passed, "score": score.value, "format_ok": score.format_ok,
                **score.details}
        if score.passed or last or is_infra_failure(score):
            self._task = None
            return StepResult((), score.value, True, False, info)
        msg = Message("user", f"{score.feedback or 'That is not right yet.'}\n(reply {self._turn + 1} of {self.max_turns})")
        self._history += [Message("assistant", action), msg]
        return StepResult((msg,), 0.0, False, False, info)
