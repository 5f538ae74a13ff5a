"""Terminal tasks without Docker: Terminal-Bench 1 task directories and a native format.

    task = load_task("tasks/hello-world")          # TerminalTask: instruction, build plan, tests
    result = run_trial(task, OracleAgent())        # build in a sandbox session, act, test
    envs.make("terminal/tb-v1")                    # the multi-turn shell env for models
    envs.make("terminal/repo-v1")                  # the same, on generated repository tasks
    envs.make("code/repo-function-v1")             # their bugs, one function shown, the fix as the reply

    temper eval --env terminal --tasks DIR --agent oracle|noop|model [--model M]
    temper data repo-tasks --n 20 --out DIR        # SWE-style bug-fix tasks, offline

Modules: task.py (reading tasks), dockerfile.py and commands.py (what of a Dockerfile runs
without Docker), host.py (what this host can stand in for), runner.py (one task in one
sandbox session), scoring.py (tests and the JUnit verdict), agents.py, env.py, report.py;
repository tasks: repo.py (the format), repo_gen.py with repo_seeds.py, mutate.py,
repo_call.py and repo_check.py (the generator and its check of the mutants), repo_env.py;
their function rung: repo_unit.py (the bug's function as text) and repo_function.py (the env).
The two commands above live in tempering/cli/terminal.py (they drive a model).
docs/terminal.md has the formats, what is honoured and what scoring defends.
"""

from .agents import AGENTS, CommandsAgent, NoopAgent, OracleAgent, TrialResult, run_trial, skip_reason
from .env import ENV_ID, TerminalEnv
from .report import TerminalReport
from .runner import TaskSession
from .scoring import TestOutcome, judge
from .repo_env import RepoEnv
from .repo_gen import RepoSpec, generate as generate_repo_task
from .task import RepoTests, TerminalTask, load_task, load_tasks

__all__ = ["AGENTS", "ENV_ID", "CommandsAgent", "NoopAgent", "OracleAgent", "RepoEnv", "RepoSpec", "RepoTests",
           "TaskSession", "TerminalEnv", "TerminalReport", "TerminalTask", "TestOutcome", "TrialResult",
           "generate_repo_task", "judge", "load_task", "load_tasks", "run_trial", "skip_reason"]
