"""check_env: prove an environment's verifier and generator behave before training on it."""

from __future__ import annotations

from dataclasses import dataclass, field

from tempering.envs.base import split_of
from tempering.envs.registry import make


@dataclass
class CheckReport:
    env_id: str
    problems: list[str] = field(default_factory=list)
    checked: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def check_env(env_id: str, n: int = 5) -> CheckReport:
    """Reference answers score full marks, empty answers zero, tasks are reproducible and in their split."""
    env = make(env_id)
    report = CheckReport(env_id)
    for split in ("train", "test"):
        for i in range(n):
            task = env.task(split, i)
            report.checked += 1
            text = "\n".join(m.content for m in task.prompt)
            if env.task(split, i) != task:
                report.problems.append(f"{task.id}: the same seed gave a different task")
            if split_of(text) != split:
                report.problems.append(f"{task.id}: prompt hashes to the other split")
            ref = env.verify(task, env.reference_response(task))
            if not ref.passed or ref.value < 1.0:
                report.problems.append(f"{task.id}: reference answer scored {ref.value} ({ref.details})")
            empty = env.verify(task, "")
            if empty.passed or empty.value > 0.0:
                report.problems.append(f"{task.id}: an empty answer scored {empty.value}")
            env.reset(task)
            step = env.step(env.reference_response(task))
            if not step.terminated or step.reward != ref.value:
                report.problems.append(f"{task.id}: step() disagrees with verify() on the reference answer")
    return report
