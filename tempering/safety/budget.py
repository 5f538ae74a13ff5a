"""Compute budgets: what a run has consumed, and whether its next step fits (`train.budget`).

CPU-hours are the user + system time of the trainer process and of every child it has
reaped, from getrusage: what the machine actually spent, whatever the core count. Sandbox
runs are children of the sandbox's fork server, which is reaped when the run closes, so
their CPU time joins the count at the end, not step by step. GPU-hours are wall time x the GPUs the run uses. A resumed run starts from what
its metric lines say it had consumed. The run stops before a step that, at the last step's
consumption, would pass the budget, the way the time budget stops it.
"""

from __future__ import annotations

import resource
import time
from dataclasses import dataclass

from tempering.config.schema import BudgetConfig


def cpu_seconds() -> float:
    """User + system seconds of this process and its reaped children."""
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@dataclass
class BudgetMeter:
    budget: BudgetConfig
    gpus: int = 0
    """GPUs the run holds (0 on a CPU run)."""
    cpu_hours_before: float = 0.0
    """Consumed by earlier sessions of a resumed run."""
    gpu_hours_before: float = 0.0
    domains_before: dict | None = None
    """CPU-hours per domain of earlier sessions."""

    def __post_init__(self) -> None:
        self.cpu0, self.wall0 = cpu_seconds(), time.monotonic()
        self.last = (self.cpu_hours_before, self.gpu_hours_before)
        self.step_cost = (0.0, 0.0)
        self.domains: dict[str, float] = dict(self.domains_before or {})

    def consumed(self) -> tuple[float, float]:
        """(CPU-hours, GPU-hours) so far."""
        return (self.cpu_hours_before + (cpu_seconds() - self.cpu0) / 3600,
                self.gpu_hours_before + self.gpus * (time.monotonic() - self.wall0) / 3600)

    def after_step(self) -> dict:
        """Metrics of the step just finished: consumption so far and its cost."""
        cpu, gpu = self.consumed()
        self.step_cost = (cpu - self.last[0], gpu - self.last[1])
        self.last = (cpu, gpu)
        out = {"cost/cpu_hours": cpu, "cost/gpu_hours": gpu}
        if self.budget.price_per_hour > 0:
            out["cost/price"] = self.budget.price_per_hour * (gpu if self.gpus else cpu)
        return out

    def by_domain(self, tokens: dict[str, int]) -> dict:
        """The last step's CPU-hours split across domains by their share of its generated
        tokens, added up over the run: cost/cpu_hours/<domain> (an apportionment, not a
        measurement: one process ran them all)."""
        total = sum(tokens.values())
        for domain, n in tokens.items():
            self.domains[domain] = self.domains.get(domain, 0.0) + (self.step_cost[0] * n / total if total else 0.0)
        return {f"cost/cpu_hours/{d}": v for d, v in self.domains.items()}

    def next_step_fits(self) -> str | None:
        """None if another step like the last one stays within budget, else why not."""
        b = self.budget
        cpu, gpu = self.last
        if b.cpu_hours > 0 and cpu + self.step_cost[0] > b.cpu_hours:
            return f"{cpu:.3f} CPU-hours used; another step ({self.step_cost[0]:.3f}) would pass train.budget.cpu_hours {b.cpu_hours:g}"
        if b.gpu_hours > 0 and gpu + self.step_cost[1] > b.gpu_hours:
            return f"{gpu:.3f} GPU-hours used; another step ({self.step_cost[1]:.3f}) would pass train.budget.gpu_hours {b.gpu_hours:g}"
        return None
