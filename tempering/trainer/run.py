"""A training run on disk: create or resume runs/<name>, loop steps, log, checkpoint.

    runs/<name>/config.yaml         the full resolved config
    runs/<name>/metrics.jsonl       one JSON line per step
    runs/<name>/checkpoints/step-N  HF weights + optimiser + trainer state

Every source of randomness in a step is derived from (seed, step), and the data cursor and
curriculum are checkpointed, so a resumed run continues exactly where the saved one was.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path

import torch
import yaml
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tempering import envs
from tempering.algorithms import KL_ESTIMATORS, POLICY_LOSSES
from tempering.config import Config, load_config, to_dict
from tempering.errors import ConfigError, RunDirError
from tempering.models import load
from tempering.trainer.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint
from tempering.trainer.rl import GRPOStep


def _optimizer(cfg: Config, model: torch.nn.Module):
    o = cfg.optim
    opt = torch.optim.AdamW(model.parameters(), lr=o.lr, betas=o.betas, weight_decay=o.weight_decay)
    warm = max(o.warmup_steps, 0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / (warm + 1)) if warm else 1.0)
    return opt, sched


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def validate(cfg: Config) -> None:
    """Reject choices the config's types cannot: names that must select an implementation."""
    a = cfg.algorithm
    if a.name not in POLICY_LOSSES:
        raise ConfigError(f"unknown algorithm.name {a.name!r}: choose one of {', '.join(POLICY_LOSSES)}")
    if a.kl_estimator not in KL_ESTIMATORS:
        raise ConfigError(f"unknown algorithm.kl_estimator {a.kl_estimator!r}: choose one of {', '.join(KL_ESTIMATORS)}")
    r = cfg.rollout
    if min(r.prompts_per_step, r.group_size, r.max_new_tokens, r.max_rounds_per_step, a.epochs) < 1:
        raise ConfigError("rollout.prompts_per_step, group_size, max_new_tokens, max_rounds_per_step and "
                          "algorithm.epochs must each be at least 1")


def prepare_run(cfg: Config, run_dir: Path) -> None:
    """Validate the config, its model and env, then create the run directory with config.yaml."""
    from tempering.models import resolve_path

    validate(cfg)
    resolve_path(cfg.model.name)
    envs.make(cfg.env.id)
    if (run_dir / "metrics.jsonl").exists() or latest_checkpoint(run_dir):
        raise RunDirError(f"run directory {str(run_dir)!r} already holds a run: continue it with "
                          f"`temper train --resume {run_dir}` or pass a new --run-dir")
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(to_dict(cfg), sort_keys=False))


def read_run_config(run_dir: Path) -> Config:
    if not (run_dir / "config.yaml").is_file():
        raise RunDirError(f"{str(run_dir)!r} is not a run directory (no config.yaml): pass the --run-dir of an earlier `temper train`")
    return load_config(run_dir / "config.yaml")


def _truncate_metrics(path: Path, last_step: int) -> None:
    """Drop lines logged after the checkpoint we resume from: they will be redone."""
    if not path.exists():
        return
    lines = [ln for ln in path.read_text().splitlines() if ln.strip() and json.loads(ln)["step"] <= last_step]
    path.write_text("".join(ln + "\n" for ln in lines))


def train(cfg: Config, run_dir: Path, steps: int | None = None, resume: bool = False, progress: bool = True,
          policy=None, env=None) -> list[dict]:
    """Run (or continue) GRPO until `steps` updates or `train.max_minutes`. Returns new metric lines.

    `policy` may pass an already-loaded LoadedModel (the demo evaluates and trains one model);
    `env` may pass an env object instead of the registered `cfg.env.id` (tests use this).
    """
    validate(cfg)
    total = steps if steps is not None else cfg.train.steps
    env = env or envs.make(cfg.env.id)
    ckpt = latest_checkpoint(run_dir) if resume else None
    if resume and ckpt is None and not (run_dir / "config.yaml").is_file():
        raise RunDirError(f"nothing to resume in {str(run_dir)!r}: it has no checkpoint")
    _seed_everything(cfg.seed)
    loaded = load(str(ckpt), cfg.model.dtype) if ckpt else (policy or load(cfg.model.name, cfg.model.dtype))
    reference = load(cfg.model.name, cfg.model.dtype).model if cfg.algorithm.beta > 0 else None
    if reference is not None:
        reference.requires_grad_(False)
    optimizer, scheduler = _optimizer(cfg, loaded.model)
    runner = GRPOStep(cfg, env, loaded.model, loaded.tokenizer, optimizer, scheduler, reference)
    start = 0
    if ckpt is not None:
        state = load_trainer_state(ckpt, optimizer, scheduler)
        runner.load_state_dict(state["runner"])
        start = state["step"]
        _truncate_metrics(run_dir / "metrics.jsonl", start)
    logged: list[dict] = []
    deadline = time.monotonic() + cfg.train.max_minutes * 60 if cfg.train.max_minutes > 0 else float("inf")
    step = start
    with Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[info]}"), disable=not progress) as bar:
        task = bar.add_task("train", total=total, completed=start, info="")
        durations: list[float] = []
        # Stop before a step that would likely end past the time budget, not after it.
        while step < total and time.monotonic() + max(durations[-3:], default=0.0) < deadline:
            step += 1
            t_step = time.monotonic()
            metrics = runner.step(step)
            logged.append(metrics)
            with open(run_dir / "metrics.jsonl", "a") as f:
                f.write(json.dumps(metrics) + "\n")
            if step % cfg.train.save_every == 0 or step == total:
                _save(run_dir, step, loaded, optimizer, scheduler, runner, cfg)
            durations.append(time.monotonic() - t_step)
            bar.update(task, completed=step, info=f"reward {metrics['reward_mean']:.3f} pass {metrics['pass_rate']:.2f} "
                                                  f"len {metrics['response_len']:.0f} {metrics['time_step']:.1f}s/step")
    if step % cfg.train.save_every != 0 and step != total and step > start:
        _save(run_dir, step, loaded, optimizer, scheduler, runner, cfg)
    return logged


def _save(run_dir, step, loaded, optimizer, scheduler, runner, cfg) -> None:
    save_checkpoint(run_dir, step, loaded.model, loaded.tokenizer, optimizer, scheduler,
                    {"step": step, "runner": runner.state_dict()}, keep=cfg.train.keep_checkpoints)
