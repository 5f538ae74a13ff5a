"""A training run on disk: create or resume runs/<name>, loop steps, log, checkpoint.

    runs/<name>/config.yaml         the full resolved config
    runs/<name>/metrics.jsonl       one JSON line per step
    runs/<name>/checkpoints/step-N  HF weights + optimiser + trainer state
    runs/<name>/store.sqlite        every episode, turn, artifact, step metric and alert (scheduler.store)
    runs/<name>/report.html         curves, evaluation, rollout viewer, sandbox statistics (eval.report)

Every source of randomness in a step is derived from (seed, step), and the data cursor and
curriculum are checkpointed, so a resumed run continues exactly where the saved one was.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Callable

import torch
import yaml

from tempering import envs, storage
from tempering.config import RECIPES, Config, load_config, to_dict
from tempering.errors import ConfigError, RunDirError
from tempering.models import load
from tempering.scheduler.store import STORE_FILE, Store
from tempering.safety.budget import BudgetMeter
from tempering.trainer.observe import Observers
from tempering.trainer.checkpoint import latest_checkpoint, load_trainer_state, save_checkpoint
from tempering.sandbox.remote import use_config as use_sandbox_config
from tempering.trainer.validate import validate


def _optimizer(cfg: Config, model: torch.nn.Module, steps: int | None = None):
    """AdamW over the trainable weights, with linear warm-up then a constant or cosine rate
    that reaches its floor at `steps` (default train.steps)."""
    o = cfg.optim
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=o.lr, betas=o.betas,
                            weight_decay=o.weight_decay)
    warm, total = max(o.warmup_steps, 0), max(steps if steps is not None else cfg.train.steps, 1)

    def factor(s: int) -> float:  # s: optimiser steps taken so far
        if s < warm:
            return (s + 1) / (warm + 1)
        if o.schedule == "cosine":
            progress = min(1.0, (s - warm) / max(1, total - warm))
            return o.min_lr_ratio + (1 - o.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress))
        return 1.0

    return opt, torch.optim.lr_scheduler.LambdaLR(opt, factor)


def _seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)


def prepare_run(cfg: Config, run_dir: Path) -> None:
    """Validate the config, its model and env, then create the run directory with config.yaml."""
    from tempering.models import resolve_device, resolve_path

    validate(cfg)
    resolve_path(cfg.model.name)
    resolve_device(cfg.model.device)
    if RECIPES[cfg.algorithm.name].kind == "rl":
        envs.make_from_config(cfg.env, cfg.rollout.max_turns)
        if cfg.reward.model:
            resolve_path(cfg.reward.model)
    elif not (storage.exists(cfg.data.path) if storage.is_remote(cfg.data.path) else Path(cfg.data.path).is_file()):
        raise ConfigError(f"data.path {cfg.data.path!r} is not a file: point it at a JSONL or Parquet file")
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


def _load_model(cfg: Config, ckpt: Path | None, policy=None):
    """The model to train: fresh from cfg.model.name (or `policy`), or from a checkpoint.
    With LoRA, the base weights come from cfg.model.name and the adapter from the checkpoint."""
    from tempering.models.loader import LoadedModel

    kind = RECIPES[cfg.algorithm.name].head  # causal, or reward (a scalar head)
    if cfg.lora.rank > 0:
        from peft import LoraConfig, PeftModel, get_peft_model

        base = load(cfg.model.name, cfg.model.dtype, cfg.model.device, kind=kind)
        if ckpt is not None:
            model = PeftModel.from_pretrained(base.model, ckpt, is_trainable=True)
        else:
            lc = cfg.lora
            model = get_peft_model(base.model, LoraConfig(r=lc.rank, lora_alpha=lc.alpha, lora_dropout=lc.dropout,
                                                          target_modules=list(lc.targets),
                                                          modules_to_save=["score"] if kind == "reward" else None))
        loaded = LoadedModel(model=model, tokenizer=base.tokenizer, name=base.name, path=base.path)
    elif ckpt is not None:
        loaded = load(str(ckpt), cfg.model.dtype, cfg.model.device, kind=kind)
    else:
        loaded = policy or load(cfg.model.name, cfg.model.dtype, cfg.model.device, kind=kind)
    if cfg.train.gradient_checkpointing:
        loaded.model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        loaded.model.config.use_cache = True  # generation still uses the KV cache
    return loaded


def _runner(cfg: Config, loaded, optimizer, scheduler, env, ckpt: Path | None, items: list | None):
    """The step runner for cfg.algorithm.name: RLStep for an rl recipe, else an offline step
    over `items` (the data file's rows, loaded once)."""
    recipe = RECIPES[cfg.algorithm.name]
    if recipe.kind == "rl":
        from tempering.trainer.rl import RLStep

        reference = None
        if cfg.algorithm.beta > 0:
            reference = load(cfg.model.name, cfg.model.dtype, cfg.model.device).model
            reference.requires_grad_(False)
        critic = None
        if recipe.needs_critic:
            from tempering.models import resolve_path
            from tempering.trainer.critic import Critic

            dtype = getattr(torch, cfg.model.dtype)
            critic = Critic.load(ckpt / "critic", cfg, dtype) if ckpt else Critic(resolve_path(cfg.model.name), cfg, dtype)
        scorer = None
        if cfg.reward.model:
            from tempering.trainer.reward_model import RewardModelScorer

            saved = ckpt / "reward_model" if ckpt is not None else None
            if saved is not None and saved.is_dir():  # retrained during the run: continue from its latest state
                scorer = RewardModelScorer(cfg, saved)
                scorer.load_optimizer(saved)
            else:
                scorer = RewardModelScorer(cfg, cfg.reward.model)
        return RLStep(cfg, env or envs.make_from_config(cfg.env, cfg.rollout.max_turns), loaded.model, loaded.tokenizer, optimizer, scheduler,
                      reference, critic, scorer)
    from tempering.trainer.offline import make_offline_step

    return make_offline_step(cfg, loaded, optimizer, scheduler, items)


def train(cfg: Config, run_dir: Path, steps: int | None = None, resume: bool = False, progress: bool = True,
          policy=None, env=None, publish: Callable[[Path, Path, int], None] | None = None) -> list[dict]:
    """Run (or continue) training until `steps` optimiser steps, `train.max_minutes`, or the end
    of a streamed corpus's train.epochs (data.streaming). Returns the new metric lines.

    `policy` may pass an already-loaded LoadedModel (the demo evaluates and trains one model);
    `env` may pass an env object instead of the registered `cfg.env.id` (tests use this);
    `publish(run_dir, checkpoint, step)` runs after each checkpoint is saved (trainer/remote.py uploads it).
    """
    validate(cfg)
    use_sandbox_config(cfg)
    ckpt = latest_checkpoint(run_dir) if resume else None
    if resume and ckpt is None and not (run_dir / "config.yaml").is_file():
        raise RunDirError(f"nothing to resume in {str(run_dir)!r}: it has no checkpoint")
    _seed_everything(cfg.seed)
    loaded = _load_model(cfg, ckpt, policy)
    items = None
    if RECIPES[cfg.algorithm.name].kind != "rl":
        from tempering.trainer.offline import offline_items

        items = offline_items(cfg, loaded.tokenizer)
    total = _total_steps(cfg, steps, items)
    optimizer, scheduler = _optimizer(cfg, loaded.model, total)
    runner = _runner(cfg, loaded, optimizer, scheduler, env, ckpt, items)
    store = Store(run_dir / STORE_FILE)
    source = cfg.env.id if RECIPES[cfg.algorithm.name].kind == "rl" else cfg.data.path
    store.register_run(cfg.name, cfg.algorithm.name, source, cfg.model.name, to_dict(cfg))
    if hasattr(runner, "store"):
        runner.store = store
        runner.final_step = total
    start = 0
    if ckpt is not None:
        state = load_trainer_state(ckpt, optimizer, scheduler)
        runner.load_state_dict(state["runner"])
        start = state["step"]
        _truncate_metrics(run_dir / "metrics.jsonl", start)
    logged: list[dict] = []
    deadline = time.monotonic() + cfg.train.max_minutes * 60 if cfg.train.max_minutes > 0 else float("inf")
    step = start
    observers = None
    try:
        observers = Observers(cfg, run_dir, store, total, start, runner.summary, progress)
        before = observers.history[-1] if observers.history else {}
        meter = BudgetMeter(cfg.train.budget, _gpus(cfg, loaded.model), before.get("cost/cpu_hours", 0.0),
                            before.get("cost/gpu_hours", 0.0),
                            {k.removeprefix("cost/cpu_hours/"): v for k, v in before.items()
                             if k.startswith("cost/cpu_hours/")})
        guard = _guard(cfg, run_dir, loaded)
        durations: list[float] = []
        # Stop before a step that would likely end past the time budget, not after it.
        while (total is None or step < total) and not getattr(runner, "exhausted", False) \
                and time.monotonic() + max(durations[-3:], default=0.0) < deadline:
            step += 1
            t_step = time.monotonic()
            metrics = runner.step(step) | meter.after_step()
            metrics |= observers.monitors(step) | meter.by_domain(store.domain_tokens(step))
            if guard is not None and guard.due(step):
                metrics |= guard.check(guard_client(loaded), step)
            logged.append(metrics)
            with open(run_dir / "metrics.jsonl", "a") as f:
                f.write(json.dumps(metrics) + "\n")
            store.add_metrics(step, metrics)
            if step % cfg.train.save_every == 0 or step == total:
                _save(run_dir, step, loaded, optimizer, scheduler, runner, cfg, publish)
            durations.append(time.monotonic() - t_step)
            stop = observers.after_step(step, metrics)
            if stop is not None:
                print(f"stopping at step {step}: alert {stop} is in train.stop_on", file=sys.stderr, flush=True)
                break
            over = meter.next_step_fits()
            if over is not None and (total is None or step < total):
                store.add_alert(step, "budget", over)
                print(f"stopping at step {step}: {over}", file=sys.stderr, flush=True)
                break
        if step % cfg.train.save_every != 0 and step != total and step > start:
            _save(run_dir, step, loaded, optimizer, scheduler, runner, cfg, publish)
    finally:
        if hasattr(runner, "close"):
            runner.close()  # background sampling and rollout workers
        store.close()
        if observers is not None:
            observers.close()
    if cfg.log.report:
        from tempering.eval.report import write_report  # Plotly takes seconds to import: only when used

        write_report(run_dir)
    return logged


def _total_steps(cfg: Config, steps: int | None, items) -> int | None:
    """--steps, else train.epochs' steps over the data's rows, else train.steps. None where a
    streamed corpus is read for train.epochs passes: its length is known only once read, and the
    run ends with the data (the step runner's `exhausted`)."""
    if steps is not None:
        return steps
    if items is None or cfg.train.epochs <= 0:
        return cfg.train.steps
    if cfg.data.streaming:
        return None
    from tempering.trainer.offline import epoch_steps

    return epoch_steps(cfg, len(items))


def _guard(cfg: Config, run_dir: Path, loaded):
    """The guard over skills RL does not train (trainer/guard.py), its baseline taken now where
    the run has none yet; None when guard.envs is empty or the run is not RL."""
    if not cfg.guard.envs or RECIPES[cfg.algorithm.name].kind != "rl":
        return None
    from tempering.trainer.guard import Guard

    guard = Guard(cfg.guard, run_dir)
    if not guard.baseline:
        guard.check(guard_client(loaded), 0)
    return guard


def guard_client(loaded):
    from tempering.rollout import HFClient

    return HFClient(loaded.model, loaded.tokenizer)


def _gpus(cfg: Config, model) -> int:
    """GPUs the run holds: the trainer's device, plus Ray rollout workers' shares."""
    own = 1 if next(model.parameters()).device.type == "cuda" else 0
    ray = cfg.scheduler.rollout_workers * cfg.scheduler.rollout_gpus if cfg.scheduler.backend == "ray" else 0
    return own + int(round(ray))


def _save(run_dir, step, loaded, optimizer, scheduler, runner, cfg, publish=None) -> None:
    ckpt = save_checkpoint(run_dir, step, loaded.model, loaded.tokenizer, optimizer, scheduler,
                           {"step": step, "runner": runner.state_dict()}, keep=cfg.train.keep_checkpoints,
                           extra=getattr(runner, "save_extra", None))
    if publish is not None:
        publish(run_dir, ckpt, step)
