"""check_env: prove an environment's verifier and generator behave before training on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from tempering.envs.base import UNSEEN, split_of
from tempering.envs.protocols import BrokenReference, FixedSize, splits_of, verifies_concurrently
from tempering.envs.registry import make


@dataclass
class CheckReport:
    env_id: str
    problems: list[str] = field(default_factory=list)
    checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def check_env(env_id: str, n: int = 5, options: dict | None = None) -> CheckReport:
    """Reference answers score full marks, empty answers zero (and a broken variant less
    than full marks, where the env can make one); tasks are reproducible and, for
    procedural envs, in their split. `n` tasks per split (0: all of a fixed dataset);
    `options` for the env's constructor (e.g. max_turns=3)."""
    env = make(env_id, **(options or {}))
    report = CheckReport(env_id)
    fixed = isinstance(env, FixedSize)  # a fixed dataset: its splits are its own, not the hash's
    tasks = []
    for split in splits_of(env):
        count = n
        if fixed:
            count = env.size(split) if n == 0 else min(n, env.size(split))
        for i in range(count):
            task = env.task(split, i)
            tasks.append(task)
            if env.task(split, i) != task:
                report.problems.append(f"{task.id}: the same seed gave a different task")
            if not fixed and split != UNSEEN and split_of("\n".join(m.content for m in task.prompt)) != split:
                report.problems.append(f"{task.id}: prompt hashes to the other split")

    def verify_all(task) -> list[str]:
        problems = []
        ref = env.verify(task, env.reference_response(task))
        if not ref.passed or ref.value < 1.0:
            problems.append(f"{task.id}: reference answer scored {ref.value} ({ref.details})")
        empty = env.verify(task, "")
        if empty.passed or empty.value > 0.0:
            problems.append(f"{task.id}: an empty answer scored {empty.value}")
        if isinstance(env, BrokenReference):
            broken = env.verify(task, env.broken_response(task))
            if broken.passed or broken.value >= 1.0:
                problems.append(f"{task.id}: a broken variant of the reference passed")
        return problems

    if verifies_concurrently(env):
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(8) as pool:
            results = list(pool.map(verify_all, tasks))
    else:
        results = [verify_all(t) for t in tasks]
    for task, problems in zip(tasks, results):
        report.checked += 1
        report.problems.extend(problems)
    task = tasks[0]
    env.reset(task)
    step = env.step(env.reference_response(task))
    if not step.terminated or step.reward != env.verify(task, env.reference_response(task)).value:
        report.problems.append(f"{task.id}: step() disagrees with verify() on the reference answer")
    return report
