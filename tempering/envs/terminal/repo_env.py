"""`terminal/repo-v1`: a model fixes a bug in a small generated repository through a shell.

The episode is `terminal/tb-v1`'s (env.py): one ```bash block per reply, DONE to finish, then
the grader runs the task's FAIL_TO_PASS and PASS_TO_PASS tests (reward 1 only when all pass;
`info["counts"]` has both counts). The tasks are generated (repo_gen.py), `task(split, i)` is
the same task every time, and the families are the seed modules. Three splits: `train` and
`test` draw the trained modules (bugs at different mutation sites), `unseen` only the
held-out ones (repo_seeds.UNSEEN_MODULES: heapq, shlex), which no train or test task uses.
"""

from __future__ import annotations

import functools

from tempering.errors import TaskError
from tempering.types import Task

from .env import TerminalEnv
from .repo_gen import ENV_ID, SPLITS, UNSEEN, generate
from .repo_seeds import SEEDS, TRAINED_MODULES, UNSEEN_MODULES

SPLIT_SIZE = 100_000
"""Tasks per split (generated on demand; any index below this works)."""


def trained_modules(modules: tuple[str, ...] | None, env_id: str) -> tuple[str, ...]:
    """The seed modules train and test draw: `modules`, checked (none unknown, none held
    out for the unseen split), else all the trained ones."""
    unknown = sorted(set(modules or ()) - set(SEEDS))
    if unknown:
        raise TaskError(f"no seed module {', '.join(unknown)} for {env_id}; there are {', '.join(SEEDS)}")
    held = sorted(set(modules or ()) & set(UNSEEN_MODULES))
    if held:
        raise TaskError(f"seed module {', '.join(held)} is held out for {env_id}'s unseen split; "
                        f"train on {', '.join(TRAINED_MODULES)}")
    return tuple(modules or TRAINED_MODULES)


class RepoEnv(TerminalEnv):
    """See the module docstring. `modules` restricts the trained seed modules (a held-out
    one is an error: it would train on the unseen split); `seed` picks another stream of tasks."""

    splits = SPLITS

    def __init__(self, max_turns: int = 20, command_timeout_s: float = 60.0, output_chars: int = 4000, sandbox=None,
                 modules: tuple[str, ...] | None = None, seed: int = 0) -> None:
        if max_turns < 1:
            raise TaskError(f"max_turns must be at least 1, got {max_turns}")
        self.id = ENV_ID
        self.max_turns, self.command_timeout_s, self.output_chars = max_turns, command_timeout_s, output_chars
        self.modules, self.seed = trained_modules(modules, ENV_ID), seed
        self.families = self.modules
        self.unseen_families = UNSEEN_MODULES
        self._sandbox = sandbox
        self.skipped: dict[str, str] = {}
        self._session = None
        self._task = None

    def size(self, split: str) -> int:
        return SPLIT_SIZE if split in self.splits else 0

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        if split not in self.splits:
            raise TaskError(f"unknown split {split!r} for {ENV_ID}: use one of {', '.join(self.splits)}")
        known = self.unseen_families if split == UNSEEN else self.families
        if family is not None and family not in known:
            raise TaskError(f"{ENV_ID} has no family {family!r} in split {split}; families: {', '.join(known)}")
        return self._task_at(split, index, family)

    @functools.lru_cache(maxsize=256)  # noqa: B019 (one env per run; generation costs a sandbox run or more)
    def _task_at(self, split: str, index: int, family: str | None) -> Task:
        modules = (family,) if family else self.unseen_families if split == UNSEEN else self.modules
        spec = generate(split, index, self.seed, modules, self.sandbox)
        t = spec.terminal_task()
        return Task(id=f"{ENV_ID}/{split}/{index}" + (f"/{family}" if family else ""), domain="terminal",
                    prompt=self.as_task(t).prompt, reference=t,
                    metadata={"category": t.category, "module": spec.module, "family": spec.module, "fail_to_pass": len(spec.fail_to_pass),
                              "pass_to_pass": len(spec.pass_to_pass), "fix": spec.patch_solution(),
                              "read": spec.read_command(), "function": spec.function,
                              "package": spec.package})

    def tool_demonstration(self, task: Task) -> list[str]:
        """A shell session as a careful engineer works it, for demonstrations (tempering.trainer.demos
        plays it for the sandbox's real outputs): run the tests and read the failure, read the
        code where it goes wrong, patch those lines in place (every line the patch replaces was
        in the output just read), run the tests again, DONE."""
        package, meta = task.metadata["package"], task.metadata
        # no .pyc written (by the tests or their subprocesses): a same-size edit within the second would read stale bytecode
        tests = f"cd /app && PYTHONDONTWRITEBYTECODE=1 python tests/test_{package}.py 2>&1 | tail -n 12"
        return [f"First, the failing test.\n```bash\n{tests}\n```",
                f"Reading `{meta['function']}` in {package}/__init__.py.\n```bash\n{meta['read']}```",
                "Fixing those lines and re-running the tests."
                f"\n```bash\n{task.metadata['fix']}{tests}\n```",
                "DONE"]
