"""`temper plan CONFIG`: the post-training decision checklist for a config, with what is risky
flagged, and the run's time, tokens, memory and cost estimated from a short measured probe.

The checklist follows the decisions a post-training run makes before it starts: compute
budget; domains and their verifiers; sandbox isolation, persistence and limits; algorithm
and key hyperparameters (learning rate, KL coefficient, reward-model update frequency);
evaluation sets; security and compliance. `Probe` holds what the CLI measured (seconds per
step and per evaluated task, peak memory, tokens per step); `estimate` scales it to the
config's budgets, the way the trainer's loop spends them (it stops before a step that
would end past train.max_minutes).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

from tempering.config import RECIPES, Config


@dataclass(frozen=True)
class Item:
    section: str
    text: str
    risk: str = ""
    """Why this setting is risky; empty when it is not."""


@dataclass(frozen=True)
class Probe:
    load_s: float
    """Loading the model (and reference) once."""
    step_s: list[float]
    """Seconds of each probe step (the first includes warm-up)."""
    eval_task_s: float
    """Seconds per greedily evaluated held-out task."""
    peak_rss_mb: float
    tokens_per_step: float
    cpu_s_per_step: float
    verified_envs: dict[str, bool] = field(default_factory=dict)
    """env id -> whether check_env passed."""


def checklist(cfg: Config, verified: dict[str, bool], rm_audited: bool = False) -> list[Item]:
    """Every decision of the config, one line each, with its risk where it has one."""
    a, r, t, b = cfg.algorithm, cfg.rollout, cfg.train, cfg.train.budget
    recipe = RECIPES[a.name]
    rl = recipe.kind == "rl"
    items = [Item("compute", f"time budget {t.max_minutes:g} min, {t.steps} steps; CPU-hours "
                             f"{b.cpu_hours or 'unlimited'}, GPU-hours {b.gpu_hours or 'unlimited'}"
                             + (f", price {b.price_per_hour:g}/hour" if b.price_per_hour else ""),
                  "no time, step-free or compute budget bounds the run" if t.max_minutes <= 0 and b.cpu_hours <= 0
                  and b.gpu_hours <= 0 and t.steps > 1000 else "")]
    envs_used = dict(cfg.env.mix) or {cfg.env.id: 1.0}
    if rl:
        for env_id, w in envs_used.items():
            ok = verified.get(env_id)
            items.append(Item("domains", f"{env_id} (weight {w:g}): verifier {'passes' if ok else 'FAILED'} check_env",
                              "" if ok else "its verifier did not pass check_env: rewards may be wrong"))
        items.append(Item("sandbox", f"env step deadline {r.env_step_s:g} s, episode wall limit "
                                     f"{r.episode_wall_s or 'none'}, {r.max_turns} turn(s) per episode "
                                     f"({'stateful session' if r.max_turns > 1 else 'fresh sandbox per answer'}); "
                                     "no network (Limits.network is always False)"))
    else:
        items.append(Item("data", f"{cfg.data.path or '(no data.path)'}: audit it with `temper audit data`"))
    items.append(Item("algorithm", f"{a.name} ({recipe.kind}); lr {cfg.optim.lr:g}, KL beta {a.beta}, "
                                   f"group size {r.group_size}, {r.prompts_per_step} prompts per step"
                      if rl else f"{a.name} ({recipe.kind}); lr {cfg.optim.lr:g}"))
    no_kl = rl and not a.beta
    no_eval = cfg.eval.n <= 0
    items.append(Item("evaluation", f"held-out: {cfg.eval.n} tasks of the test split, greedy",
                      "no KL leash and no held-out evaluation: nothing would show the policy drifting or hacking"
                      if no_kl and no_eval else ("no held-out evaluation" if no_eval else "")))
    if rl and no_kl and not no_eval:
        items.append(Item("algorithm", "KL coefficient is 0: the policy is not held near the reference",
                          "no KL: watch entropy and length alerts (train.stop_on)"))
    if cfg.reward.model:
        items.append(Item("reward", f"reward model {cfg.reward.model} (weight {cfg.reward.model_weight:g}, "
                                    f"retrained every {cfg.reward.model_update_every or 'never'} steps)",
                          "" if rm_audited else "reward model without an audit: run `temper audit rm` first"))
    offline = os.environ.get("HF_HUB_OFFLINE") == "1"
    items.append(Item("security", f"HF_HUB_OFFLINE={'1' if offline else 'unset'}; untrusted code runs in the "
                                  "sandbox only, never in the trainer; stop_on "
                                  f"{', '.join(t.stop_on) or 'nothing'}",
                      "" if offline else "HF_HUB_OFFLINE is not 1: a model or tokenizer load could reach the network"))
    return items


def estimate(cfg: Config, probe: Probe, eval_runs: int = 2) -> dict:
    """Time, tokens, memory and cost of the whole run, from the probe.

    Training runs until train.steps or until the next step would end past train.max_minutes;
    `eval_runs` held-out evaluations of eval.n tasks (the demo runs one before and one after)."""
    steady = probe.step_s[1:] or probe.step_s
    step_s = sum(steady) / len(steady)
    budget_s = cfg.train.max_minutes * 60 if cfg.train.max_minutes > 0 else math.inf
    steps = cfg.train.steps
    if steps * step_s > budget_s:
        steps = max(1, int(budget_s // step_s))  # the loop stops before a step that would end past the budget
    train_s = steps * step_s
    eval_s = eval_runs * cfg.eval.n * probe.eval_task_s
    total_s = probe.load_s + train_s + eval_s
    cpu_hours = steps * probe.cpu_s_per_step / 3600
    out = {"steps": steps, "step_s": step_s, "train_s": train_s, "eval_s": eval_s, "load_s": probe.load_s,
           "total_s": total_s, "tokens": steps * probe.tokens_per_step, "peak_rss_mb": probe.peak_rss_mb,
           "cpu_hours": cpu_hours, "budget_bound": steps < cfg.train.steps}
    if cfg.train.budget.price_per_hour:
        out["cost"] = cpu_hours * cfg.train.budget.price_per_hour
    return out
