"""Alerts: what goes wrong in an RL run, noticed from each step's metrics.

    nan               the loss or the gradient norm is NaN or infinite
    kl                the mean per-token KL to the reference is above alerts.kl_max
    reward_collapse   the pass rate was above 0, then stayed at 0 for alerts.collapse_steps steps
    entropy_collapse  the entropy fell below alerts.entropy_floor x its mean over the first steps
    length_drift      the response length moved alerts.length_ratio x away from its first steps' mean
    canary            the hackable canary env's weak pass rate exceeds its strong one by alerts.canary_gap
    heldback          more than alerts.heldback_max of re-scored passing attempts fail the stronger check
    repeated_replies  more than alerts.repeats_max of a step's attempts repeat another task's reply
    reward_jump       one family's pass rate jumps alerts.family_jump above its earlier mean, and
                      that many passes had a chance under alerts.family_jump_p at the earlier rate
    sync              after a weight sync, the rollout engine (vLLM) holds other tensors than the
                      trainer, or its probe log-probs are off (rollout/sync_ok 0); stops the run
                      by default (train.stop_on)
    guard             a skill RL does not train (guard.envs) dropped against the start with
                      paired p < guard.alpha (trainer/guard.py)
    infra             more than alerts.infra_share of a step's attempts failed for the sandbox, not
                      the model, after rollout.infra_retries re-runs (infra/share); they train on nothing

Each check is a pure function of the metric lines so far (the newest last). An alert is a
warning line, a row in the store's `alerts` table and a banner in the report; the kinds in
`train.stop_on` also end the run cleanly, with a checkpoint. Each kind is raised once per
episode of trouble: again only after the condition has cleared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from tempering.config.schema import AlertConfig


@dataclass(frozen=True)
class Alert:
    step: int
    kind: str
    message: str


def _nan(history: list[dict], a: AlertConfig) -> str | None:
    bad = [k for k in ("loss", "grad_norm", "kl", "reward_mean") if k in history[-1]
           and isinstance(history[-1][k], float) and not math.isfinite(history[-1][k])]
    return f"{', '.join(bad)} is not finite ({', '.join(str(history[-1][k]) for k in bad)})" if bad else None


def _kl(history: list[dict], a: AlertConfig) -> str | None:
    kl = history[-1].get("kl")
    return f"KL to the reference is {kl:.3g}, above alerts.kl_max {a.kl_max:g}" if kl is not None and kl > a.kl_max else None


def _reward_collapse(history: list[dict], a: AlertConfig) -> str | None:
    rates = [m["pass_rate"] for m in history if "pass_rate" in m]
    k = a.collapse_steps
    if len(rates) <= k or any(rates[-k:]) or not any(rates[:-k]):
        return None
    return f"pass rate 0 for the last {k} steps, after a best of {max(rates[:-k]):.2f}"


def _baseline(history: list[dict], key: str, a: AlertConfig) -> tuple[float, float] | None:
    """(mean over the first baseline_steps steps, latest) of `key`, once there are more steps than that."""
    values = [m[key] for m in history if isinstance(m.get(key), (int, float)) and math.isfinite(m[key])]
    if len(values) <= a.baseline_steps:
        return None
    return sum(values[:a.baseline_steps]) / a.baseline_steps, values[-1]


def _entropy_collapse(history: list[dict], a: AlertConfig) -> str | None:
    got = _baseline(history, "entropy", a)
    if got is None or got[0] <= 0 or got[1] >= a.entropy_floor * got[0]:
        return None
    return f"entropy {got[1]:.3g} is below {a.entropy_floor:g} x its first steps' mean {got[0]:.3g}"


def _length_drift(history: list[dict], a: AlertConfig) -> str | None:
    got = _baseline(history, "response_len", a)
    if got is None or got[0] <= 0 or 1 / a.length_ratio <= got[1] / got[0] <= a.length_ratio:
        return None
    return f"response length {got[1]:.0f} tokens against {got[0]:.0f} over the first steps ({got[1] / got[0]:.2f}x)"


def _pooled(history: list[dict], n_key: str, rate_key: str, window: int) -> tuple[float, float]:
    """(attempts, attempt-weighted mean rate) of `rate_key` over the last `window` steps."""
    rows = [(m[n_key], m[rate_key]) for m in history[-window:] if n_key in m and rate_key in m]
    n = sum(c for c, _ in rows)
    return n, (sum(c * v for c, v in rows) / n if n else 0.0)


def _canary(history: list[dict], a: AlertConfig) -> str | None:
    n, weak = _pooled(history, "hack/canary_n", "hack/canary_weak_pass", a.window)
    _, strong = _pooled(history, "hack/canary_n", "hack/canary_strong_pass", a.window)
    if n < a.canary_min or weak - strong < a.canary_gap:
        return None
    return (f"canary env: the weak checker passes {weak:.0%} of {n:.0f} attempts, the strong one {strong:.0%} "
            f"(last {a.window} steps): the policy is learning to game a checker")


def _heldback(history: list[dict], a: AlertConfig) -> str | None:
    n, disagree = _pooled(history, "hack/heldback_n", "hack/heldback_disagree", a.window)
    if n < a.heldback_min or disagree <= a.heldback_max:
        return None
    return f"{disagree:.0%} of {n:.0f} re-scored passing attempts fail the stronger check (last {a.window} steps)"


def _repeated(history: list[dict], a: AlertConfig) -> str | None:
    share = history[-1].get("drift/repeated_replies", 0.0)
    return f"{share:.0%} of the step's attempts repeat another task's reply word for word" if share > a.repeats_max else None


def _jump(history: list[dict], a: AlertConfig) -> str | None:
    jump, chance = history[-1].get("drift/family_jump", 0.0), history[-1].get("drift/family_jump_p", 1.0)
    if jump < a.family_jump or chance >= a.family_jump_p:
        return None
    return (f"a family's pass rate jumped {jump:+.2f} over its earlier mean in one step "
            f"(p={chance:.1e} at the earlier rate)")


def _rm_audit(history: list[dict], a: AlertConfig) -> str | None:
    from tempering.safety.rm_audit import AGREEMENT_MIN, EDIT_MAX, LENGTH_R_MAX

    m = history[-1]
    if "rm_audit/length_r" not in m:
        return None
    problems = []
    if m.get("rm_audit/pairs", 0) >= a.rm_audit_min_pairs and m.get("rm_audit/agreement", 1.0) < AGREEMENT_MIN:
        problems.append(f"orders {m['rm_audit/agreement']:.0%} of {m['rm_audit/pairs']} pass/fail pairs like the verifier")
    if abs(m["rm_audit/length_r"]) >= LENGTH_R_MAX:
        problems.append(f"its score follows reply length (r {m['rm_audit/length_r']:+.2f})")
    if m.get("rm_audit/polite_shift", 0.0) >= EDIT_MAX:
        problems.append(f"a polite sentence moves its scores by {m['rm_audit/polite_shift']:.2f} spreads")
    return "reward model: " + "; ".join(problems) if problems else None


def _sync(history: list[dict], a: AlertConfig) -> str | None:
    m = history[-1]
    if m.get("rollout/sync_ok", 1.0) >= 1.0:
        return None
    unequal = m.get("rollout/sync_tensors_unequal", 0)
    what = (f"{unequal:.0f} of {m.get('rollout/sync_tensors_checked', 0):.0f} engine tensors differ from the trainer's"
            if unequal else f"its probe log-probs differ from the trainer's by up to {m.get('rollout/probe_diff_max', 0):.3g} nats")
    return f"after the weight sync, {what}: the rollout engine is not sampling from the trained weights"


def _guard(history: list[dict], a: AlertConfig) -> str | None:
    from tempering.trainer.guard import guard_message

    return guard_message(history[-1])


def _infra(history: list[dict], a: AlertConfig) -> str | None:
    m = history[-1]
    share = m.get("infra/share", 0.0)
    if share <= a.infra_share:
        return None
    return (f"{share:.0%} of the step's attempts ({m.get('infra/failed', 0):.0f}) failed in the sandbox on every try, "
            f"above alerts.infra_share {a.infra_share:g}: they were left out of training; check the sandbox "
            f"(its fork server or sandbox.urls replicas)")


CHECKS: dict[str, Callable[[list[dict], AlertConfig], str | None]] = {
    "nan": _nan, "kl": _kl, "reward_collapse": _reward_collapse, "entropy_collapse": _entropy_collapse,
    "length_drift": _length_drift, "canary": _canary, "heldback": _heldback, "repeated_replies": _repeated,
    "reward_jump": _jump, "rm_audit": _rm_audit, "sync": _sync, "guard": _guard, "infra": _infra,
}


class AlertWatch:
    """Runs every check after each step; remembers which kinds are active so that a
    condition that lasts is raised once, and again only after it has cleared."""

    def __init__(self, cfg: AlertConfig) -> None:
        self.cfg = cfg
        self.active: set[str] = set()

    def check(self, history: list[dict]) -> list[Alert]:
        step = int(history[-1].get("step", len(history)))
        out = []
        for kind, check in CHECKS.items():
            message = check(history, self.cfg)
            if message is None:
                self.active.discard(kind)
            elif kind not in self.active:
                self.active.add(kind)
                out.append(Alert(step, kind, message))
        return out
