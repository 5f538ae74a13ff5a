"""The env contract: what every env provides, and the optional hooks some envs add.

    Env        reset(task) -> messages, step(action) -> StepResult: one episode at a time
    TaskSet    task(split, index, family), tasks(split, n), verify(task, response) -> Score,
               reference_response(task): what training, eval and check_env draw from

Optional hooks. Each is a runtime-checkable protocol, so a caller asks once, by name:

    FixedSize          size(split): a fixed dataset of that many tasks per split; its split
                       is its own, not the prompt hash
    BrokenReference    broken_response(task): a plausible wrong answer check_env must reject
    CompressesContext  context_messages(count_tokens, budget): the episode so far restated
                       in `budget` tokens (long episodes go on from it)
    MultiTurn          max_turns: the env ends its own episodes after this many replies

Optional attributes, read through one function each (the default holds when absent):

    splits             splits_of(env)            ("train", "test")
    families           families_of(env)          (): task families a curriculum can weight
    concurrent_verify  verifies_concurrently(env)  False: verify is safe from several threads
    turns_optional     episodic(env, max_turns)  False: a MultiTurn env that is single-turn at
                                                 max_turns=1 (the HumanEval-shaped code envs),
                                                 so one reply of it is measured as one answer

Every registered env satisfies Env and TaskSet; envs built on SingleTurnEnv or
FeedbackEnv get them for free.
"""

from __future__ import annotations

from typing import Callable, Protocol, runtime_checkable

from tempering.types import Message, Score, StepResult, Task

SPLITS = ("train", "test")


@runtime_checkable
class Env(Protocol):
    """One episode at a time: reset(task), then step(action) until terminated or truncated."""

    id: str

    def reset(self, task: Task) -> list[Message]: ...

    def step(self, action: str) -> StepResult: ...


@runtime_checkable
class TaskSet(Protocol):
    """Tasks by split and index, and the verifier that scores answers to them."""

    id: str

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        """The index-th task of a split, the same every time."""

    def tasks(self, split: str, n: int) -> list[Task]:
        """The first n tasks of a split."""

    def verify(self, task: Task, response: str) -> Score: ...

    def reference_response(self, task: Task) -> str:
        """What a perfect model would write: check_env proves it scores full marks."""


@runtime_checkable
class FixedSize(Protocol):
    def size(self, split: str) -> int:
        """How many tasks the split holds."""


@runtime_checkable
class BrokenReference(Protocol):
    def broken_response(self, task: Task) -> str:
        """A near miss of the reference that must not pass."""


@runtime_checkable
class CompressesContext(Protocol):
    def context_messages(self, count_tokens: Callable[[str], int], budget: int) -> list[Message]:
        """The episode so far (goal, key decisions, latest errors) in at most `budget` tokens."""


@runtime_checkable
class MultiTurn(Protocol):
    max_turns: int
    """Replies after which the env ends the episode itself."""


def splits_of(env) -> tuple[str, ...]:
    """The splits an env has: its own `splits`, else train and test."""
    return getattr(env, "splits", SPLITS)


def families_of(env) -> tuple[str, ...]:
    """The task families a curriculum can weight: the env's `families`, else none."""
    return tuple(getattr(env, "families", ()))


def verifies_concurrently(env) -> bool:
    """Whether env.verify may run on several threads at once (`concurrent_verify`)."""
    return bool(getattr(env, "concurrent_verify", False))


def episodic(env, max_turns: int) -> bool:
    """Whether `max_turns` replies to `env` are measured as episodes (the env's feedback
    between them) rather than as single answers: a MultiTurn env, unless its turns are
    optional (`turns_optional`) and one reply is asked for."""
    return isinstance(env, MultiTurn) and (max_turns > 1 or not getattr(env, "turns_optional", False))
