"""Where each step's metrics go besides metrics.jsonl and the store: a progress line or bar,
TensorBoard event files, a Weights & Biases run.

Every logger has `log(step, metrics, episodes)` and `close()`. TensorBoard and W&B get the
names TRL and verl log (`train/reward`, `train/completions/mean_length`, `actor/entropy`, ...: see ALIASES) beside
Tempering's own, so dashboards built for those carry over; histograms of the step's rewards and
advantages; and a few sampled rollouts as text. Both are optional extras
(`pip install '.[log]'`); asking for one without its package is a ConfigError naming the fix.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import torch

from tempering.errors import ConfigError

ALIASES: dict[str, tuple[str, ...]] = {
    "reward_mean": ("train/reward", "critic/score/mean"),
    "reward_std": ("train/reward_std",),
    "kl": ("train/kl", "actor/ppo_kl"),
    "entropy": ("train/entropy", "actor/entropy"),
    "response_len": ("train/completions/mean_length", "response_length/mean"),
    "clip_frac": ("train/clip_ratio/region_mean", "actor/pg_clipfrac"),
    "grad_norm": ("train/grad_norm", "actor/grad_norm"),
    "lr": ("train/learning_rate", "actor/lr"),
    "loss": ("train/loss", "actor/pg_loss"),
}
"""Tempering metric -> the names TRL's GRPOTrainer (train/...) and verl (actor/..., critic/...)
log it under."""

SAMPLES_PER_STEP = 2
"""Rollouts logged as text per step."""


def _scalars(metrics: dict) -> dict[str, float]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or k == "step":
            continue
        out[f"tempering/{k}"] = float(v)
        for alias in ALIASES.get(k, ()):
            out[alias] = float(v)
    if metrics.get("groups_sampled"):  # TRL's share of groups whose rewards are all equal
        out["train/frac_reward_zero_std"] = 1.0 - metrics.get("groups_informative", 0) / metrics["groups_sampled"]
    return out


class ProgressLines:
    """One line per step for logs and pipes: step, reward, pass rate, informative groups,
    seconds, and the ETA against the step budget or the time budget, whichever ends first
    (`total` None: the run ends with a streamed corpus, its steps unknown)."""

    def __init__(self, total: int | None, start: int, max_minutes: float, out=None) -> None:
        self.total, self.start, self.out = total, start, out or sys.stdout
        self.t0 = time.monotonic()
        self.deadline = self.t0 + max_minutes * 60 if max_minutes > 0 else math.inf

    def log(self, step: int, metrics: dict, episodes=()) -> None:
        now = time.monotonic()
        per_step = (now - self.t0) / max(step - self.start, 1)
        left = per_step * (self.total - step) if self.total is not None else math.inf
        eta = min(left, max(self.deadline - now, 0.0))
        parts = [f"step {step}/{self.total}" if self.total is not None else f"step {step}"]
        for key, fmt in (("reward_mean", "reward {:.3f}"), ("pass_rate", "pass {:.2f}"), ("loss", "loss {:.4f}"),
                         ("kl", "kl {:.4f}")):
            if isinstance(metrics.get(key), (int, float)):
                parts.append(fmt.format(metrics[key]))
        if "groups_informative" in metrics:
            parts.append(f"informative {metrics['groups_informative']}/{metrics.get('groups_sampled', '?')}")
        parts.append(f"{metrics.get('time_step', per_step):.1f}s")
        if eta < math.inf:
            parts.append(f"ETA {_clock(eta)}")
        print(" ".join(parts), file=self.out, flush=True)

    def close(self) -> None:
        pass


def _clock(seconds: float) -> str:
    seconds = int(seconds)
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class TensorBoardLogger:
    """Event files under <run>/tensorboard, written with torch's SummaryWriter."""

    def __init__(self, run_dir: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError as e:
            raise ConfigError("log.tensorboard is true but the tensorboard package is missing: "
                              "pip install '.[log]' (or tensorboard), or set log.tensorboard false") from e
        self.writer = SummaryWriter(log_dir=str(Path(run_dir) / "tensorboard"))

    def log(self, step: int, metrics: dict, episodes=()) -> None:
        for key, value in _scalars(metrics).items():
            self.writer.add_scalar(key, value, step)
        rewards = [e.reward for e in episodes]
        if rewards:
            self.writer.add_histogram("rollout/reward", torch.tensor(rewards), step)
        advantages = [e.advantage for e in episodes if e.advantage is not None]
        if advantages:
            self.writer.add_histogram("rollout/advantage", torch.tensor(advantages), step)
        for e in list(episodes)[:SAMPLES_PER_STEP]:
            self.writer.add_text(f"rollout/{e.domain}", f"**{e.task_id}** reward {e.reward:.2f}\n\n```\n{e.reply}\n```",
                                 step)
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


class WandbLogger:
    """A W&B run in <run>/wandb; offline (the default here) writes it locally, for `wandb sync`."""

    def __init__(self, run_dir: Path, name: str, mode: str, config: dict) -> None:
        try:
            import wandb
        except ImportError as e:
            raise ConfigError(f"log.wandb is {mode!r} but the wandb package is missing: pip install '.[log]' "
                              f"(or wandb), or set log.wandb off") from e
        self.wandb = wandb
        self.run = wandb.init(project="tempering", name=name, dir=str(run_dir), mode=mode, config=config,
                              settings=wandb.Settings(console="off", x_disable_stats=True))

    def log(self, step: int, metrics: dict, episodes=()) -> None:
        row = dict(_scalars(metrics))
        rewards = [e.reward for e in episodes]
        if rewards:
            row["rollout/reward"] = self.wandb.Histogram(rewards)
        advantages = [e.advantage for e in episodes if e.advantage is not None]
        if advantages:
            row["rollout/advantage"] = self.wandb.Histogram(advantages)
        sample = list(episodes)[:SAMPLES_PER_STEP]
        if sample:
            row["rollout/samples"] = self.wandb.Table(columns=["domain", "task", "reward", "reply"],
                                                      data=[[e.domain, e.task_id, e.reward, e.reply] for e in sample])
        self.run.log(row, step=step)

    def close(self) -> None:
        self.run.finish()
