"""Which tasks a round trains on: spend samples where learning happens.

Three levels, each optional:

    domains   with several envs mixed (`env.mix`), every round's prompts are split across
              them by weight as exact quotas (largest remainder), not by chance
    families  within a domain, the family curriculum (`FamilyCurriculum`) favours problem
              types whose groups were informative lately
    tasks     a share of prompts (`train.replay`) revisits earlier tasks whose pass rate is
              neither 0 nor 1, drawn with weight p(1-p): the tasks a group of attempts can
              still learn from. Fresh tasks fill the rest.

Everything is a function of the RNG it is handed and of state that is checkpointed, so a
resumed run draws the same tasks.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tempering.envs.mix import MixedEnv
from tempering.envs.protocols import families_of
from tempering.scheduler.curriculum import FamilyCurriculum
from tempering.types import Task

MAX_TRACKED = 20_000
"""Tasks whose pass rate is kept; beyond this the least-attempted are forgotten."""


@dataclass
class TaskStats:
    domain: str
    family: str | None
    index: int
    attempts: int = 0
    passes: int = 0

    @property
    def rate(self) -> float:
        return self.passes / self.attempts if self.attempts else 0.0

    @property
    def weight(self) -> float:
        """p(1-p): zero for tasks always or never solved."""
        return self.rate * (1.0 - self.rate)


def quotas(weights: dict[str, float], k: int) -> dict[str, int]:
    """Split k slots in proportion to weights (largest remainder; ties by order)."""
    total = sum(weights.values())
    exact = {d: k * w / total for d, w in weights.items()}
    counts = {d: int(x) for d, x in exact.items()}
    for d in sorted(exact, key=lambda d: -(exact[d] - counts[d]))[: k - sum(counts.values())]:
        counts[d] += 1
    return counts


class TaskSampler:
    """Draws (task, family label) pairs for a round and learns from their outcomes."""

    def __init__(self, env, split: str, curriculum: bool = True, replay: float = 0.0) -> None:
        self.env, self.split, self.replay = env, split, replay
        if isinstance(env, MixedEnv):
            self.domains = {d: env.members[d] for d in env.members}
            self.weights = dict(env.weights)
        else:
            self.domains = {env.id: env}
            self.weights = {env.id: 1.0}
        self.curricula = {d: FamilyCurriculum(families_of(e) if curriculum else ())
                          for d, e in self.domains.items()}
        self.cursor = 0
        """Index of the next fresh task (shared across domains)."""
        self.stats: dict[str, TaskStats] = {}
        """task id -> pass-rate record."""

    def draw(self, rng: random.Random, k: int) -> list[tuple[Task, str | None]]:
        out = []
        for domain, count in quotas(self.weights, k).items():
            env = self.domains[domain]
            mixed = [s for s in self.stats.values() if s.domain == domain and s.weight > 0]
            families = self.curricula[domain].sample(rng, count)
            for fam in families:
                if self.replay > 0 and mixed and rng.random() < self.replay:
                    s = rng.choices(mixed, weights=[m.weight for m in mixed])[0]
                    task, fam = env.task(self.split, s.index, s.family), s.family
                else:
                    task = env.task(self.split, self.cursor, fam)
                    self.stats.setdefault(task.id, TaskStats(domain, fam, self.cursor))
                    self.cursor += 1
                out.append((task, self._label(domain, fam)))
        return out

    def _label(self, domain: str, family: str | None) -> str | None:
        if len(self.domains) == 1:
            return family
        return f"{domain}:{family}" if family else domain

    def update(self, task: Task, family_label: str | None, passed: list[bool], informative: bool) -> None:
        domain = self._domain_of(task)
        own = family_label.partition(":")[2] or None if len(self.domains) > 1 and family_label else family_label
        self.curricula[domain].update(own, informative)
        s = self.stats.get(task.id)
        if s is not None:
            s.attempts += len(passed)
            s.passes += sum(passed)
        if len(self.stats) > MAX_TRACKED:
            for tid in sorted(self.stats, key=lambda t: self.stats[t].attempts)[: len(self.stats) - MAX_TRACKED]:
                del self.stats[tid]

    def _domain_of(self, task: Task) -> str:
        for d in self.domains:
            if task.id.startswith(d + "/"):
                return d
        return next(iter(self.domains))

    def shares(self) -> dict[str, float]:
        """Mean family weight per domain (for metrics)."""
        return {d: sum(c.weights().values()) / max(1, len(c.weights())) for d, c in self.curricula.items()}

    def state_dict(self) -> dict:
        return {"cursor": self.cursor, "curricula": {d: c.state_dict() for d, c in self.curricula.items()},
                "stats": {t: [s.domain, s.family, s.index, s.attempts, s.passes] for t, s in self.stats.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.cursor = state["cursor"]
        for d, c in state["curricula"].items():
            self.curricula[d].load_state_dict(c)
        self.stats = {t: TaskStats(*v) for t, v in state["stats"].items()}
