"""`terminal/tb-v1`: a model works a Terminal-Bench task through a shell, turn by turn.

Each reply holds one ```bash block (run in the task's sandbox session; the output and exit
code come back as the next message) or the line DONE. On DONE, or when the turns or the
task's agent time run out, the tests run (see scoring.py) and the reward is 1 when every
test passed, else 0. Tasks come from a directory: the `tasks_dir` argument, else
$TEMPERING_TERMINAL_TASKS, else a `shared/terminal-bench-sample` beside or inside the
checkout. Tasks this host cannot run are left out; `skipped` says why.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tempering.errors import TaskError
from tempering.envs.context import compress
from tempering.types import Message, Score, StepResult, Task, Turn

from .agents import skip_reason
from .runner import TaskSession
from .task import TerminalTask, load_tasks

ENV_ID = "terminal/tb-v1"
_BLOCK = re.compile(r"```(?:bash|sh|shell|console)?[ \t]*\n(.*?)```", re.S)
_DONE = re.compile(r"^\s*DONE\s*$", re.M)
SYSTEM = (
    "You are an expert working in a Linux terminal to complete a task. Each reply runs shell "
    "commands: put them in one ```bash code block and you will see their output and exit code. "
    "Commands run non-interactively (no editors, no prompts), without network access, in /app; "
    "the working directory and exported variables carry over between replies. When the task is "
    "complete, reply with the single line DONE."
)


def default_tasks_dir() -> Path:
    env = os.environ.get("TEMPERING_TERMINAL_TASKS")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[3]
    for cand in (repo / "shared" / "terminal-bench-sample", repo.parent / "shared" / "terminal-bench-sample"):
        if cand.is_dir():
            return cand
    raise TaskError(f"{ENV_ID} needs a directory of tasks: set TEMPERING_TERMINAL_TASKS, or pass --tasks DIR")


def parse_action(text: str) -> tuple[str | None, bool]:
    """(the first bash block's commands or None, whether the reply says DONE outside blocks)."""
    m = _BLOCK.search(text)
    return (m.group(1) if m else None), bool(_DONE.search(_BLOCK.sub("", text)))


def clip(text: str, limit: int) -> str:
    """Head and tail of long output, saying how much was left out."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"


class TerminalEnv:
    """See the module docstring. One instance plays one episode at a time."""

    splits = ("test",)
    concurrent_verify = False

    def __init__(self, tasks_dir: str | Path | None = None, max_turns: int = 20, command_timeout_s: float = 60.0,
                 output_chars: int = 4000, sandbox=None, only: tuple[str, ...] = ()) -> None:
        if max_turns < 1:
            raise TaskError(f"max_turns must be at least 1, got {max_turns}")
        self.id = ENV_ID
        self.tasks_dir = Path(tasks_dir) if tasks_dir else default_tasks_dir()
        self.max_turns, self.command_timeout_s, self.output_chars = max_turns, command_timeout_s, output_chars
        self._sandbox = sandbox
        self.all_tasks = load_tasks(self.tasks_dir, only)
        self._runnable: list[TerminalTask] | None = None
        self.skipped: dict[str, str] = {}
        self._session: TaskSession | None = None
        self._task: TerminalTask | None = None

    @property
    def sandbox(self):
        if self._sandbox is None:
            from tempering.sandbox import shared_sandbox

            self._sandbox = shared_sandbox()
        return self._sandbox

    def runnable(self) -> list[TerminalTask]:
        """The tasks this host can run (others land in `skipped` with their reason)."""
        if self._runnable is None:
            self._runnable = []
            for t in self.all_tasks:
                reason = skip_reason(t, self.sandbox)
                if reason:
                    self.skipped[t.id] = reason
                else:
                    self._runnable.append(t)
        return self._runnable

    def size(self, split: str) -> int:
        return len(self.runnable()) if split == "test" else 0

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        if split != "test":
            raise TaskError(f"{ENV_ID} is evaluation data: its only split is 'test'")
        t = self.runnable()[index]
        return self.as_task(t)

    def tasks(self, split: str, n: int, start: int = 0) -> list[Task]:
        return [self.task(split, i) for i in range(start, min(start + n, self.size(split)))]

    def as_task(self, t: TerminalTask) -> Task:
        prompt = (Message("system", SYSTEM), Message("user", t.instruction))
        return Task(id=f"{self.id}/{t.id}", domain="terminal", prompt=prompt, reference=t,
                    metadata={"category": t.category, "difficulty": t.difficulty})

    # -- the episode

    def reset(self, task: Task) -> list[Message]:
        self.close()
        t: TerminalTask = task.reference
        self._session = TaskSession(t, self.sandbox)
        problem = self._session.build()
        if problem:
            self.close()
            raise TaskError(f"{t.id}: {problem}")
        self._task, self._turn, self._commands = t, 0, 0
        # The agent's time is its commands' time. The wall clock since reset would also count
        # the time this episode waits while the model generates for the whole batch, so on a
        # slow machine late turns got a 1-second command and "timed out" (docs/terminal.md).
        self._time_left = float(t.max_agent_timeout_sec)
        self._history = list(task.prompt)
        return list(task.prompt)

    def context_messages(self, count_tokens, budget: int) -> list[Message]:
        """The conversation so far in at most `budget` tokens (rollout.context_budget): the
        task and the latest command with its output in full, older outputs cut to their
        error lines, then whole older turns dropped."""
        return compress(self._history, count_tokens, budget)

    def step(self, action: str) -> StepResult:
        if self._session is None or self._task is None:
            raise TaskError(f"env {self.id}: call reset(task) before step(action)")
        self._turn += 1
        command, done = parse_action(action)
        info: dict = {"turn": self._turn, "status": None}
        note = ""
        if command is not None:
            limit = min(self.command_timeout_s, max(self._time_left, 1.0))
            r = self._session.run(command, limit)
            self._time_left -= r.wall_s
            self._commands += 1
            info.update(status=r.status, exit_code=r.exit_code)
            note = f"(timed out after {limit:.0f} s)\n" if r.status == "timeout" else ""
            note += f"{clip(r.output, self.output_chars)}\n[exit code {r.exit_code}]"
        elif not done:
            note = "Reply with one ```bash code block of commands to run, or the line DONE when the task is complete."
        out_of_time = self._time_left <= 0
        if done or out_of_time or self._turn >= self.max_turns:
            return self._finish(info, terminated=done, why="done" if done else
                                ("agent_timeout" if out_of_time else "turns"))
        self._history += [Message("assistant", action), Message("user", note)]
        return StepResult((Message("user", note),), 0.0, False, False, info)

    @staticmethod
    def verdict(last: Turn | None) -> tuple[str | None, dict]:
        """(why the tests passed or failed, per-test outcomes) as an episode's last turn
        recorded them; (None, {}) when the episode ended before the tests ran."""
        info = last.info if last is not None else {}
        return info.get("reason"), info.get("tests", {})

    def _finish(self, info: dict, terminated: bool, why: str) -> StepResult:
        """Run the tests. The episode's status: passed, tests_failed, or no_command (no reply
        ran a command: the model talked instead of acting, the format failure of this domain);
        a last command that did not end ok (timeout, memory...) keeps its own status."""
        outcome = self._session.test()
        self.close()
        if info["status"] in (None, "ok"):
            info["command_status"] = info["status"]
            info["status"] = "passed" if outcome.passed else "tests_failed" if self._commands else "no_command"
        info.update(passed=outcome.passed, reason=outcome.reason, tests=outcome.tests, ended=why)
        if outcome.sandbox_status == "sandbox_error":  # the tests never ran: no verdict on the agent (envs/infra.py)
            info["sandbox_status"] = outcome.sandbox_status
        if outcome.counts:
            info["counts"] = outcome.counts
        return StepResult((), 1.0 if outcome.passed else 0.0, terminated, not terminated, info)

    def close(self) -> None:
        if self._session is not None:
            self._session.close()
        self._session, self._task = None, None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # -- check_env

    def reference_response(self, task: Task) -> str:
        return f"```bash\n{task.reference.solution or ''}\n```\nDONE"

    def verify(self, task: Task, response: str) -> Score:
        """A one-reply episode: run `response`'s bash block, then the tests."""
        self.reset(task)
        result = self.step(response if _DONE.search(_BLOCK.sub("", response)) else response + "\nDONE")
        return Score(result.reward, bool(result.passed), result.info)
