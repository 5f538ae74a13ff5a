"""The single-turn environment every task-set-plus-verifier domain uses (the Env and
TaskSet protocols it satisfies are in `tempering.envs.protocols`).

Splits are disjoint by construction: a generated task belongs to the test split when a hash
of its prompt text falls in the test bucket (1 in 10), and to train otherwise. Generators
draw candidates from a seeded stream until one lands in the requested split, so no training
prompt can ever equal a held-out prompt, whatever the seeds.

An env may also hold out whole schemas, families or layouts: given an `unseen` generator,
it has a third split, `unseen`, drawn only from material the train and test generators
never use (SQL schemas of held-out themes, CAD families, filing layouts). `test` measures
the instances of what training saw; `unseen` measures the skill beyond it. An env may also
draw test from a generator of its own (`_generator`), its prompts still split by the hash:
cad/parts-v1 words its test drawings in styles training never draws.
"""

from __future__ import annotations

import hashlib
import random
from typing import Callable

from tempering.envs.protocols import SPLITS, Env  # noqa: F401  (Env: re-exported, its old home)
from tempering.errors import TaskError
from tempering.types import Message, Score, StepResult, Task

TEST_BUCKETS = 10  # 1 in TEST_BUCKETS prompts is held out
UNSEEN = "unseen"
"""The split of held-out schemas, families or layouts (envs built with an `unseen` generator)."""


def split_of(text: str) -> str:
    """Which split a prompt belongs to: a pure function of its text."""
    bucket = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big") % TEST_BUCKETS
    return "test" if bucket == 0 else "train"


Generator = Callable[[random.Random, str | None], Task]
"""(rng, family or None) -> Task. Must be deterministic given the rng state."""
Verifier = Callable[[Task, str], Score]


class OneAnswer:
    """reset/step for envs whose episode is one answer scored by `self.verify`."""

    id: str
    _task: Task | None = None

    def reset(self, task: Task) -> list[Message]:
        self._task = task
        return list(task.prompt)

    def step(self, action: str) -> StepResult:
        if self._task is None:
            raise TaskError(f"env {self.id}: call reset(task) before step(action)")
        score = self.verify(self._task, action)
        self._task = None
        return StepResult(messages=(), reward=score.value, terminated=True, truncated=False,
                          info={"passed": score.passed, **score.details})


class SingleTurnEnv(OneAnswer):
    """A procedural task set plus a verifier; the episode ends after one answer."""

    def __init__(self, id: str, generate: Generator, verify: Verifier, reference_response: Callable[[Task], str],
                 families: tuple[str, ...] = (), unseen: Generator | None = None,
                 unseen_families: tuple[str, ...] = ()):
        self.id = id
        self.domain = id.split("/")[0]
        self._generate = generate
        self.verify = verify
        self.reference_response = reference_response
        """Text a perfect model would write for a task; check_env scores it."""
        self.families = families
        """Task families (problem types) a curriculum can weight; empty when there is one."""
        self._unseen = unseen
        self.unseen_families = unseen_families
        """Families only the unseen split draws (training never sees them)."""
        self.splits = SPLITS + ((UNSEEN,) if unseen is not None else ())
        """train and test, plus unseen when the env holds out whole schemas, families or layouts."""
        self._task: Task | None = None

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        """The index-th task of a split (deterministic)."""
        if split not in self.splits:
            raise TaskError(f"unknown split {split!r} for env {self.id}: use one of {', '.join(self.splits)}")
        known = self.unseen_families if split == UNSEEN and self.unseen_families else self.families
        if family is not None and family not in known:
            raise TaskError(f"env {self.id} has no task family {family!r} in split {split}; families: {', '.join(known) or '(none)'}")
        rng = random.Random(f"{self.id}|{split}|{family}|{index}")
        if split == UNSEEN:  # held out by construction: nothing the other splits draw
            task = self._unseen(rng, family)
            return Task(id=f"{self.id}/{split}/{index}" + (f"/{family}" if family else ""), domain=self.domain,
                        prompt=task.prompt, reference=task.reference, metadata=task.metadata)
        generate = self._generator(split)
        for _ in range(1000):
            task = generate(rng, family)
            text = "\n".join(m.content for m in task.prompt)
            if split_of(text) == split:
                return Task(id=f"{self.id}/{split}/{index}" + (f"/{family}" if family else ""), domain=self.domain,
                            prompt=task.prompt, reference=task.reference, metadata=task.metadata)
        raise TaskError(f"env {self.id} could not generate a {split} task: its generator repeats one prompt")

    def tasks(self, split: str, n: int, start: int = 0) -> list[Task]:
        return [self.task(split, i) for i in range(start, start + n)]

    def _generator(self, split: str) -> Generator:
        """What a train or test task is drawn from: one generator for both, so the prompt's hash
        alone splits them. An env that holds out more than families for test (cad/parts-v1's
        held-out wordings) returns another for test; its prompts still pass the hash."""
        return self._generate


