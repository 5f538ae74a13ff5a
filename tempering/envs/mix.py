"""Several envs as one, for multi-domain training (`env.id: mix`, `env.mix: {id: weight}`).

A task keeps its own env's id prefix (`math/arith-v1/train/7`), so verifying or stepping it
goes back to the env it came from; each task's `domain` is its env's. Which domain each
prompt comes from is the task sampler's job (`tempering.scheduler.priorities`).
"""

from __future__ import annotations

import copy

from tempering.envs.protocols import CompressesContext
from tempering.errors import ConfigError, TaskError
from tempering.types import Message, Score, StepResult, Task

MIX_ID = "mix"


class MixedEnv:
    def __init__(self, members: dict[str, object], weights: dict[str, float]) -> None:
        self.id = MIX_ID
        self.domain = MIX_ID
        self.members = members
        self.weights = weights
        self.families = tuple(members)
        """Member env ids: a `family` argument names the member (optionally `id:family`)."""
        self._active = None

    def member(self, family: str | None):
        """(member env, its own family or None) for a family name `id` or `id:family`."""
        env_id, _, own = (family or "").partition(":")
        if env_id not in self.members:
            raise TaskError(f"mix has no env {env_id!r}; members: {', '.join(self.members)}")
        return self.members[env_id], own or None

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        env, own = self.member(family)
        return env.task(split, index, own)

    def tasks(self, split: str, n: int) -> list[Task]:
        """n tasks per member, members in order (for evaluation)."""
        return [t for env in self.members.values() for t in env.tasks(split, n)]

    def owner(self, task: Task):
        for env_id, env in self.members.items():
            if task.id.startswith(env_id + "/"):
                return env
        raise TaskError(f"task {task.id!r} belongs to none of the mixed envs ({', '.join(self.members)})")

    def verify(self, task: Task, response: str) -> Score:
        return self.owner(task).verify(task, response)

    def reset(self, task: Task) -> list[Message]:
        self._active = copy.copy(self.owner(task))  # one env per episode: it keeps the episode's state
        self.__dict__.pop("context_messages", None)
        if isinstance(self._active, CompressesContext):  # this episode's env can compress its conversation
            self.context_messages = self._active.context_messages
        return self._active.reset(task)

    def step(self, action: str) -> StepResult:
        if self._active is None:
            raise TaskError("env mix: call reset(task) before step(action)")
        return self._active.step(action)

    def reference_response(self, task: Task) -> str:
        return self.owner(task).reference_response(task)


def make_mixed(weights: dict[str, float], options: dict[str, dict] | None = None) -> MixedEnv:
    from tempering.envs.registry import make

    if not weights:
        raise ConfigError("env.id is mix but env.mix is empty: list the envs and their weights, "
                          "e.g. env.mix: {math/arith-v1: 1.0, code/synth-v1: 1.0}")
    bad = {k: v for k, v in weights.items() if v <= 0}
    if bad:
        raise ConfigError(f"env.mix weights must be positive, got {bad}: drop an env instead of giving it weight 0")
    options = options or {}
    return MixedEnv({env_id: make(env_id, **options.get(env_id, {})) for env_id in weights}, dict(weights))
