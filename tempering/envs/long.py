"""Long tasks: one goal reached through an ordered list of subtasks.

    LongTask     a task's reference: the goal, the subtasks (each a prompt plus what its
                 grader needs) and one reply that does them all
    LongEnv      the episode. One subtask is open at a time. A reply is graded against it
                 and, once it passes, against the following ones too, so one reply may
                 finish several. A subtask closes when it passes or runs out of attempts,
                 and the next one opens. Each turn's work and log go to an ArtifactStore;
                 a reply with RECALL lines gets those artifacts back instead of a grade.

Each step's reward is the share of subtasks it newly passed, so an episode's return is the
fraction of subtasks passed, also when a turn limit cuts it short; info["subtasks"] has
each subtask's status. `context_messages` gives the conversation for the next turn within a
token budget (envs.context.compress), its first message restating the goal, the
progress and the open step, so compression never drops what the model is working on.

What passing a subtask means is the concrete env's business: a `Grader` turns (subtask,
the current work of the earlier subtasks, reply) into an `Attempt`. envs/code/project.py
(`code/project-v1`) is one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from tempering.envs.base import Generator, SingleTurnEnv
from tempering.errors import TaskError
from tempering.envs.artifacts import ArtifactStore, answer_recalls, parse_recalls
from tempering.envs.context import CountTokens, compress
from tempering.types import Message, Score, StepResult, Task

RECALL_HELP = ("To see an earlier version of your {work} or its test log, reply with a line "
               "`RECALL <step>/<turn>/{work}` or `RECALL <step>/<turn>/log` (`RECALL {work}` for the "
               "latest); such a reply is answered, not graded.")


@dataclass(frozen=True)
class Subtask:
    """One step of a long task."""

    name: str
    """Unique within its task; names the step's artifacts (no '/' or whitespace)."""
    prompt: str
    """What the model is asked when the step opens."""
    check: Any
    """What the step's grader needs (for code, a CodeTask with the hidden tests)."""


@dataclass(frozen=True)
class LongTask:
    """A long task's reference: its goal, its subtasks in order, and a reply that does them all."""

    goal: str
    subtasks: tuple[Subtask, ...]
    solution: str


@dataclass(frozen=True)
class Attempt:
    """One reply graded against one subtask."""

    work: str
    """What the reply contributes (for code, its code); "" when nothing."""
    score: Score
    feedback: str
    """What the model is told; never the hidden tests."""
    log: str
    """The execution log, kept as an artifact."""


Grader = Callable[[Subtask, tuple[str, ...], str], Attempt]
"""(subtask, the current work of the subtasks before the open one, reply) -> Attempt.
Called from several threads at once by check_env: keep it free of shared state."""


@dataclass
class SubtaskState:
    """Where one subtask stands in an episode."""

    name: str
    status: str = "pending"  # pending | open | passed | failed (out of attempts)
    attempts: int = 0
    work: str = ""
    """The current artifact: the latest work graded against this subtask."""


def brief(long: LongTask, states: Sequence[SubtaskState], work: str) -> str:
    """The goal, how to RECALL, each step's status and the open step's prompt."""
    parts = [long.goal, RECALL_HELP.format(work=work),
             "Progress: " + ", ".join(f"{s.name} {s.status}" for s in states) + "."]
    open_ = next((i for i, s in enumerate(states) if s.status == "open"), None)
    if open_ is not None:
        parts.append(step_text(long, open_))
    return "\n\n".join(parts)


def step_text(long: LongTask, index: int) -> str:
    sub = long.subtasks[index]
    return f"Step {index + 1} of {len(long.subtasks)} ({sub.name}): {sub.prompt}"


def long_prompt(long: LongTask, work: str = "work") -> tuple[Message, ...]:
    """A long task's first message: its brief with the first step open."""
    return (Message("user", brief(long, _fresh(long), work)),)


def _fresh(long: LongTask) -> list[SubtaskState]:
    """The subtasks' states at the start: the first open, the rest pending."""
    return [SubtaskState(s.name, "open" if i == 0 else "pending") for i, s in enumerate(long.subtasks)]


class LongEnv(SingleTurnEnv):
    """A long task's episode (see the module docstring). Tasks come from `generate` as in
    SingleTurnEnv; `verify` scores one reply as the whole task (what check_env proves)."""

    def __init__(self, id: str, generate: Generator, grade: Grader, families: tuple[str, ...] = (),
                 max_attempts: int = 3, max_recalls: int = 3, work: str = "work") -> None:
        if max_attempts < 1:
            raise TaskError(f"env {id}: max_attempts must be at least 1, got {max_attempts}")
        super().__init__(id, generate, self.verify_whole, _solution, families)
        self.grade = grade
        self.max_attempts = max_attempts
        self.max_recalls = max_recalls
        """Replies answered with artifacts per episode; past it, RECALL replies are graded."""
        self.work = work
        """The name of a turn's work artifact ("code" for code)."""
        self.states: list[SubtaskState] = []
        self.store = ArtifactStore()
        self.history: list[Message] = []
        self.turn = self.recalls = 0
        self.partial = 0.0

    def reset(self, task: Task) -> list[Message]:
        long: LongTask = task.reference
        if not long.subtasks:
            raise TaskError(f"task {task.id} has no subtasks")
        self._task = task
        self.states = _fresh(long)
        self.store = ArtifactStore()
        self.history = list(task.prompt)
        self.turn = self.recalls = 0
        self.partial = 0.0
        return list(task.prompt)

    def step(self, action: str) -> StepResult:
        if self._task is None:
            raise TaskError(f"env {self.id}: call reset(task) before step(action)")
        self.turn += 1
        self.history.append(Message("assistant", action))
        refs = parse_recalls(action)
        if refs and self.recalls < self.max_recalls:
            self.recalls += 1
            answer = "\n\n".join(m.content for m in answer_recalls(self.store, action))
            return self._result(answer, 0, "recall", {"recalled": refs})
        return self._grade(action)

    def context_messages(self, count_tokens: CountTokens, budget: int) -> list[Message]:
        """The conversation for the next turn in at most `budget` tokens (by `count_tokens`
        over the contents), its first user message replaced by the current brief."""
        if not self.history:
            raise TaskError(f"env {self.id}: call reset(task) before context_messages()")
        first = next(i for i, m in enumerate(self.history) if m.role == "user")
        goal = self.history[first]
        if self._task is not None:  # the episode goes on: restate the goal around the open step
            goal = Message("user", brief(self._task.reference, self.states, self.work))
        return compress([*self.history[:first], goal, *self.history[first + 1:]], count_tokens, budget)

    def verify_whole(self, task: Task, response: str) -> Score:
        """One reply taken as the whole task: the fraction of subtasks it passes on its own."""
        if not response.strip():
            return Score(0.0, False, {"status": "empty"})
        subtasks = task.reference.subtasks
        scores = [self.grade(sub, (), response).score for sub in subtasks]
        passed = sum(s.passed for s in scores)
        return Score(passed / len(subtasks), passed == len(subtasks),
                     {"subtasks": {sub.name: s.status for sub, s in zip(subtasks, scores)}})

    def _grade(self, action: str) -> StepResult:
        """Grade a reply against the open subtask, then the following ones while it passes."""
        long: LongTask = self._task.reference
        open_ = next(i for i, s in enumerate(self.states) if s.status == "open")
        prior = tuple(s.work for s in self.states[:open_])
        lines, newly, status, saved = [f"Turn {self.turn}:"], 0, "", {}
        self.partial = 0.0
        for i in range(open_, len(self.states)):
            attempt = self.grade(long.subtasks[i], prior, action)
            if i > open_ and not attempt.score.passed:
                break  # a reply may finish later steps too, but is not charged for them
            state, status = self.states[i], attempt.score.details.get("status", "")
            state.attempts += 1
            state.work = attempt.work
            for name, text in ((self.work, attempt.work), ("log", attempt.log)):
                saved[self.store.put(state.name, self.turn, name, text).ref] = text
            if attempt.score.passed:
                state.status, newly = "passed", newly + 1
                lines.append(f"Step {i + 1} ({state.name}) passed.")
                continue
            if state.attempts >= self.max_attempts:
                state.status = "failed"
                lines.append(f"{attempt.feedback}\nStep {i + 1} ({state.name}) is out of attempts; moving on.")
            else:
                self.partial = attempt.score.value  # the open step's share of checks passed
                lines.append(f"{attempt.feedback}\nFix it and reply again (attempt {state.attempts + 1} of "
                             f"{self.max_attempts} at step {i + 1}).")
            break
        following = next((i for i, s in enumerate(self.states) if s.status in ("open", "pending")), None)
        if following is not None and self.states[following].status == "pending":
            self.states[following].status = "open"
            lines.append(step_text(long, following))
        return self._result("\n\n".join(lines), newly, status, {"artifacts": saved})

    def _result(self, feedback: str, newly: int, status: str, extra: dict) -> StepResult:
        """The step's result; it ends the episode once no subtask is open. info["progress"]
        (subtasks passed plus the open one's share of checks, over the count) feeds the
        rollout watchdogs."""
        n = len(self.states)
        passed = sum(s.status == "passed" for s in self.states)
        open_ = [s for s in self.states if s.status == "open"]
        info = {"turn": self.turn, "passed": passed == n, "progress": (passed + self.partial) / n, "status": status,
                "subtasks": [{"name": s.name, "status": s.status, "attempts": s.attempts} for s in self.states],
                **extra}
        if not open_:
            self._task = None
            return StepResult((), newly / n, True, False, info)
        message = Message("user", feedback)
        self.history.append(message)
        return StepResult((message,), newly / n, False, False, info)


def _solution(task: Task) -> str:
    return task.reference.solution
