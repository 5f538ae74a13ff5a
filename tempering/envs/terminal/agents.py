"""Agents that work a terminal task, and `run_trial`: one task, one agent, one verdict.

    oracle    runs the task's reference solution (solution.sh, or solution.yaml's commands)
    noop      does nothing; every runnable task must score 0 with it
    commands  runs a fixed list of shell commands (tests use it to play cheating agents)

A model agent is the multi-turn env in env.py driven by the rollout loop.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Protocol

from tempering.errors import SandboxInputError

from . import host
from .runner import TaskSession
from .task import TerminalTask


class Agent(Protocol):
    name: str
    needs_solution: bool

    def act(self, task: TerminalTask, session: TaskSession, budget_s: float) -> str:
        """Work in `session` for at most `budget_s` seconds; returns a short note for the report."""
        ...


class OracleAgent:
    name, needs_solution = "oracle", True

    def act(self, task: TerminalTask, session: TaskSession, budget_s: float) -> str:
        r = session.run_script(task.solution or "", budget_s)
        return f"solution {r.status} (exit {r.exit_code})"


class NoopAgent:
    name, needs_solution = "noop", False

    def act(self, task: TerminalTask, session: TaskSession, budget_s: float) -> str:
        return "did nothing"


class CommandsAgent:
    """Runs `commands` one by one, as an agent typing them would."""

    needs_solution = False

    def __init__(self, commands: list[str], name: str = "commands") -> None:
        self.commands, self.name = list(commands), name

    def act(self, task: TerminalTask, session: TaskSession, budget_s: float) -> str:
        deadline = time.monotonic() + budget_s
        codes = []
        for cmd in self.commands:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            codes.append(session.run(cmd, left).exit_code)
        return f"ran {len(codes)} commands, exit codes {codes}"


AGENTS = {"oracle": OracleAgent, "noop": NoopAgent}


@dataclass
class TrialResult:
    """One attempt at one task."""

    task_id: str
    category: str
    difficulty: str
    agent: str
    status: str
    """passed | failed | skipped (could not run here; `reason` says why) | error (the runner
    itself failed; counted as a trial that did not pass, with the reason shown)."""
    reason: str
    trial: int = 0
    tests: dict[str, str] = field(default_factory=dict)
    counts: dict[str, list[int]] = field(default_factory=dict)
    """Repository tasks: [passed, total] for "fail_to_pass" and "pass_to_pass"."""
    agent_note: str = ""
    build_s: float = 0.0
    agent_s: float = 0.0
    test_s: float = 0.0
    wall_s: float = 0.0

    @property
    def reward(self) -> float:
        return 1.0 if self.status == "passed" else 0.0

    def to_json(self) -> dict:
        return {**asdict(self), "reward": self.reward}


def skip_reason(task: TerminalTask, sandbox, agent: Agent | None = None) -> str | None:
    """Why `task` cannot run on this host (with `agent`), or None when it can."""
    if task.problem:
        return task.problem
    if agent is not None and agent.needs_solution and task.solution is None:
        return "the task has no reference solution (solution.sh or solution.yaml)"
    reasons = host.unmet(task.needs, sandbox)
    return "; ".join(reasons) if reasons else None


def run_trial(task: TerminalTask, agent: Agent, sandbox=None, trial: int = 0) -> TrialResult:
    """Build the task, let `agent` work, run the tests; a task that cannot run here comes
    back `skipped` with its reason, never scored."""
    if sandbox is None:
        from tempering.sandbox import shared_sandbox

        sandbox = shared_sandbox()
    t0 = time.monotonic()
    result = TrialResult(task.id, task.category, task.difficulty, agent.name, "skipped", "", trial)
    reason = skip_reason(task, sandbox, agent)
    if reason:
        result.reason, result.wall_s = reason, time.monotonic() - t0
        return result
    with TaskSession(task, sandbox) as session:
        try:
            problem = session.build()
            t1 = time.monotonic()
            result.build_s = t1 - t0
            if problem:
                result.reason, result.wall_s = problem, t1 - t0
                return result
            result.agent_note = agent.act(task, session, task.max_agent_timeout_sec)
            t2 = time.monotonic()
            outcome = session.test()
        except (OSError, SandboxInputError) as e:  # the runner failed, not the agent: say so, don't score
            result.status, result.reason = "error", f"runner error: {type(e).__name__}: {e}"
            result.wall_s = time.monotonic() - t0
            return result
        t3 = time.monotonic()
    result.agent_s, result.test_s, result.wall_s = t2 - t1, t3 - t2, t3 - t0
    result.status = "passed" if outcome.passed else "failed"
    result.reason, result.tests, result.counts = outcome.reason, outcome.tests, outcome.counts
    return result
