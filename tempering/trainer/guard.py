"""The guard: skills RL does not train, watched while it trains.

RL on SQL or CAD can cost what the model could already do (arithmetic, HumanEval-shaped code).
Every `guard.every` updates, and once before the first (the baseline), the policy answers the
same validation tasks of each `guard.envs` env greedily. Validation tasks are the env's test
split from `guard.offset` on, none with the prompt of any of the first `guard.reported` test
tasks (what every evaluation reports; a small task space repeats prompts), so
no checkpoint is ever chosen on the reported test (and HumanEval, a fixed set of 164, is
refused: watch `code/synth-v1` instead). Per env and evaluation:

    guard/<env>/accuracy   share passed
    guard/<env>/drop       baseline accuracy minus this one
    guard/<env>/p          exact McNemar p of the paired change against the baseline
    guard/best_step        the update whose guard accuracy (mean over envs) is highest so far

A drop with p < `guard.alpha` is the `guard` alert; with `guard` in train.stop_on the run stops
there with a checkpoint, and `guard/best_step` names the checkpoint to go back to.
"""

from __future__ import annotations

import json
from pathlib import Path

from tempering import envs
from tempering.config.schema import GuardConfig
from tempering.envs.infra import InfraRetry, is_infra_failure
from tempering.errors import ConfigError
from tempering.eval.stats import mcnemar_exact
from tempering.types import SamplingParams

INFRA_RETRIES = 2
"""Re-runs of a guard answer whose sandbox failed (as rollout.infra_retries); a task still
failing is left out of that evaluation's paired comparison, never counted as a drop."""

BASELINE_FILE = "guard-baseline.json"


class Guard:
    def __init__(self, cfg: GuardConfig, run_dir: Path) -> None:
        from tempering.envs.protocols import FixedSize

        self.cfg, self.path = cfg, Path(run_dir) / BASELINE_FILE
        self.envs = {}
        for env_id, n in cfg.envs.items():
            env = envs.make(env_id)
            if isinstance(env, FixedSize):
                raise ConfigError(f"guard.envs: {env_id} is a fixed set of tasks; a guard that watches it selects "
                                  "checkpoints on what it reports: watch a generated env (code/synth-v1, math/arith-v1)")
            self.envs[env_id] = (env, validation_tasks(env, n, cfg.offset, cfg.reported))
        self.baseline: dict[str, list[bool]] = json.loads(self.path.read_text()) if self.path.is_file() else {}
        self.best: tuple[float, int] | None = None

    @property
    def on(self) -> bool:
        return bool(self.envs)

    def due(self, step: int) -> bool:
        return self.on and (not self.baseline or step % self.cfg.every == 0)

    def check(self, client, step: int) -> dict:
        """Evaluate every guard env at `step` (0: the baseline, saved with the run); returns
        the metrics (`guard_message` reads the alert from them)."""
        params = SamplingParams(temperature=0.0, max_new_tokens=self.cfg.max_new_tokens)
        results = {}
        for env_id, (env, tasks) in self.envs.items():
            comps = client.generate([t.prompt for t in tasks], params)
            checked = InfraRetry(env, INFRA_RETRIES)
            scores = [checked.verify(t, c.text) for t, c in zip(tasks, comps)]
            # None: the sandbox failed on every try; the pair is left out of the comparison
            results[env_id] = [None if is_infra_failure(s) else bool(s.passed) for s in scores]
        if not self.baseline:
            self.baseline = results
            self.path.write_text(json.dumps(results))
        metrics, drops = {}, []
        for env_id, now in results.items():
            pairs = [(x, y) for x, y in zip(self.baseline[env_id], now) if x is not None and y is not None]
            before, now = [x for x, _ in pairs] or [False], [y for _, y in pairs] or [False]
            b = sum(x and not y for x, y in zip(before, now))  # right before, wrong now
            c = sum(y and not x for x, y in zip(before, now))
            acc, base = sum(now) / len(now), sum(before) / len(before)
            p = mcnemar_exact(b, c)
            metrics |= {f"guard/{env_id}/accuracy": acc, f"guard/{env_id}/drop": base - acc, f"guard/{env_id}/p": p}
            if acc < base and p < self.cfg.alpha:
                drops.append(f"{env_id} {base:.0%} -> {acc:.0%} (p={p:.2g}, n={len(now)})")
        mean = sum(sum(bool(x) for x in r) / max(1, sum(x is not None for x in r))
                   for r in results.values()) / len(results)
        if self.best is None or mean > self.best[0]:
            self.best = (mean, step)
        metrics |= {"guard/best_step": self.best[1], "guard/alpha": self.cfg.alpha, "guard/dropped": len(drops)}
        return metrics


def validation_tasks(env, n: int, offset: int, reported: int) -> list:
    """n distinct test tasks from `offset` on whose prompts are none of the first `reported`."""
    seen = {t.prompt for t in env.tasks("test", reported)}
    out, index = [], offset
    while len(out) < n and index < offset + 100 * n:
        task = env.task("test", index)
        index += 1
        if task.prompt not in seen:
            seen.add(task.prompt)
            out.append(task)
    if len(out) < n:
        raise ConfigError(f"guard.envs: {env.id} has fewer than {n} test tasks apart from the first {reported}: "
                          "ask for fewer")
    return out


def guard_message(m: dict) -> str | None:
    """The guard alert's line from one step's metrics, or None (trainer/alerts.py)."""
    if not m.get("guard/dropped"):
        return None
    alpha = m.get("guard/alpha", 0.05)
    drops = [f"{k.split('/', 1)[1].rsplit('/', 1)[0]} down {m[k]:.0%} (p={m[k[:-4] + 'p']:.2g})"
             for k in m if k.startswith("guard/") and k.endswith("/drop") and m[k] > 0 and m[k[:-4] + "p"] < alpha]
    return (f"a skill RL does not train dropped against the start: {'; '.join(drops)}; "
            f"best guard accuracy at update {m.get('guard/best_step', 0):.0f}")
