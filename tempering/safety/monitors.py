"""Reward-hacking monitors: per-step metrics computed from the step's stored attempts.

    hack/canary_*        attempts at a hackable canary env (code/canary-v1): the share its
                         weak checker passed (that is the reward), the share its strong
                         checker passed, and the gap between them
    hack/heldback_*      passing attempts re-scored by their env's stronger check
                         (reward.heldback): how many, and the share the stronger check failed
    drift/repeated_replies  share of attempts whose reply is word for word the reply to a
                         different task in the same step (a policy that found one answer
                         that the verifiers accept)
    drift/family_jump    the largest rise of one family's pass rate over its mean in earlier
                         steps (families with at least MIN_FAMILY attempts in the step), and
                         drift/family_jump_p, the chance of that many passes at the earlier rate

Each is a pure function of `Rollout`-like records (domain, task_id, family, passed, reply,
info); the alert checks (trainer/alerts.py) pool them over a few steps.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from typing import Iterable

MIN_FAMILY = 4


def canary_metrics(rollouts: Iterable) -> dict[str, float]:
    marks = [r.info["canary"] for r in rollouts if r.info and isinstance(r.info.get("canary"), dict)]
    if not marks:
        return {}
    weak = sum(bool(m["weak_passed"]) for m in marks) / len(marks)
    strong = sum(bool(m["strong_passed"]) for m in marks) / len(marks)
    return {"hack/canary_n": float(len(marks)), "hack/canary_weak_pass": weak, "hack/canary_strong_pass": strong,
            "hack/canary_gap": weak - strong}


def heldback_metrics(rollouts: Iterable) -> dict[str, float]:
    checks = [r.info["heldback"] for r in rollouts if r.info and isinstance(r.info.get("heldback"), dict)]
    if not checks:
        return {}
    failed = sum(not c["strong_passed"] for c in checks)
    return {"hack/heldback_n": float(len(checks)), "hack/heldback_disagree": failed / len(checks)}


def _norm(reply: str) -> str:
    return re.sub(r"\s+", " ", reply).strip()


def repeated_replies(rollouts: list) -> float:
    tasks: dict[str, set[str]] = defaultdict(set)
    for r in rollouts:
        if _norm(r.reply):
            tasks[_norm(r.reply)].add(r.task_id)
    shared = sum(1 for r in rollouts if _norm(r.reply) and len(tasks[_norm(r.reply)]) > 1)
    return shared / len(rollouts) if rollouts else 0.0


def _tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def family_jump(rollouts: list, earlier: dict[str, tuple[int, int]]) -> tuple[float, float]:
    """(largest rise of a family's pass rate over its earlier mean, and how likely that many
    passes were at the earlier rate): the binomial tail at the Laplace-smoothed earlier rate
    (passes + 1) / (attempts + 2), so a group of 4 that gets lucky is not a jump.
    `earlier`: family -> (attempts, passes) of the steps before this one."""
    now: dict[str, list[bool]] = defaultdict(list)
    for r in rollouts:
        if r.family:
            now[r.family].append(bool(r.passed))
    best = (0.0, 1.0)
    for f, p in now.items():
        a, k = earlier.get(f, (0, 0))
        if len(p) < MIN_FAMILY or a < MIN_FAMILY:
            continue
        rise = sum(p) / len(p) - k / a
        chance = _tail(sum(p), len(p), (k + 1) / (a + 2))
        if rise > best[0]:
            best = (rise, chance)
    return best


class StepMonitors:
    """Remembers per-family counts across steps; `metrics(rollouts)` for each new step."""

    def __init__(self) -> None:
        self.families: dict[str, tuple[int, int]] = {}

    def metrics(self, rollouts: list) -> dict[str, float]:
        out = canary_metrics(rollouts) | heldback_metrics(rollouts)
        if rollouts:
            out["drift/repeated_replies"] = repeated_replies(rollouts)
            out["drift/family_jump"], out["drift/family_jump_p"] = family_jump(rollouts, self.families)
        for r in rollouts:
            if r.family:
                a, p = self.families.get(r.family, (0, 0))
                self.families[r.family] = (a + 1, p + int(bool(r.passed)))
        return out
