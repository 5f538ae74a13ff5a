"""Reject a config before any model loads: unknown choices, out-of-range numbers, and
settings that do not apply to the chosen algorithm (one error naming the key and the fix)."""

from __future__ import annotations

import dataclasses
from typing import Callable

from tempering.algorithms import KL_ESTIMATORS
from tempering.algorithms.losses import AGGREGATIONS
from tempering.algorithms.preference import DPO_LOSSES
from tempering.config import RECIPES, Config, CriticConfig, DataConfig, PreferenceConfig, Recipe, RewardConfig
from tempering.errors import ConfigError
from tempering.trainer.alerts import CHECKS as ALERT_CHECKS

SCHEDULES = ("constant", "cosine")
PIPELINES = ("rounds", "overlap")
BACKENDS = ("local", "ray")
PROGRESS = ("auto", "bar", "lines", "off")
WANDB_MODES = ("off", "offline", "online")


def _choice(key: str, value, allowed) -> None:
    if value not in allowed:
        raise ConfigError(f"unknown {key} {value!r}: choose one of {', '.join(allowed)}")


def _changed(section, default) -> list[str]:
    """Fields of `section` that differ from the defaults."""
    return [f.name for f in dataclasses.fields(section) if getattr(section, f.name) != getattr(default, f.name)]


def _only_for(cfg: Config, section: str, default, reads: Callable[[Recipe], bool], why: str) -> None:
    """One error if `section` differs from its defaults under a recipe for which `reads` is
    false; `why` names the recipes that read it as {names}."""
    algorithms = [name for name, recipe in RECIPES.items() if reads(recipe)]
    changed = _changed(getattr(cfg, section), default)
    if changed and cfg.algorithm.name not in algorithms:
        raise ConfigError(f"{section}.{changed[0]} is set, but {why.format(names=' and '.join(algorithms))}; "
                          f"algorithm.name is {cfg.algorithm.name!r}: "
                          f"remove the {section} settings or use algorithm.name {' or '.join(algorithms)}")


def validate(cfg: Config) -> None:
    """Raise one ConfigError for the first problem found, checked in this order."""
    _choice("algorithm.name", cfg.algorithm.name, tuple(RECIPES))
    recipe = RECIPES[cfg.algorithm.name]
    _choices_and_ranges(cfg)
    _rollout(cfg, recipe)
    _algorithm(cfg, recipe)
    _reward(cfg)
    if recipe.kind == "offline":
        _offline(cfg, recipe)


def _choices_and_ranges(cfg: Config) -> None:
    a, r, o = cfg.algorithm, cfg.rollout, cfg.optim
    _choice("algorithm.kl_estimator", a.kl_estimator, tuple(KL_ESTIMATORS))
    _choice("algorithm.loss_agg", a.loss_agg, AGGREGATIONS)
    _choice("algorithm.kl_in", a.kl_in, ("loss", "reward"))
    _choice("preference.loss", cfg.preference.loss, DPO_LOSSES)
    _choice("optim.schedule", o.schedule, SCHEDULES)
    _choice("rollout.pipeline", r.pipeline, PIPELINES)
    _choice("scheduler.backend", cfg.scheduler.backend, BACKENDS)
    _choice("log.progress", cfg.log.progress, PROGRESS)
    _choice("log.wandb", cfg.log.wandb, WANDB_MODES)
    for kind in cfg.train.stop_on:
        _choice("train.stop_on entry", kind, tuple(ALERT_CHECKS))
    positive = {"rollout.prompts_per_step": r.prompts_per_step, "rollout.group_size": r.group_size,
                "rollout.max_new_tokens": r.max_new_tokens, "rollout.max_rounds_per_step": r.max_rounds_per_step,
                "rollout.max_turns": r.max_turns, "algorithm.epochs": a.epochs, "optim.grad_accum": o.grad_accum,
                "data.batch_size": cfg.data.batch_size, "data.max_len": cfg.data.max_len,
                "data.shuffle_buffer": cfg.data.shuffle_buffer,
                "train.save_every": cfg.train.save_every, "scheduler.rollout_workers": cfg.scheduler.rollout_workers,
                "scheduler.sandbox_workers": cfg.scheduler.sandbox_workers, "scheduler.env_workers": cfg.scheduler.env_workers}
    for key, value in positive.items():
        if value < 1:
            raise ConfigError(f"{key} must be at least 1, got {value}")
    for key, value in {"algorithm.clip_eps": a.clip_eps, "algorithm.clip_eps_high": a.clip_eps_high,
                       "algorithm.beta": a.beta, "algorithm.entropy_coef": a.entropy_coef,
                       "algorithm.overlong_buffer": a.overlong_buffer, "lora.rank": cfg.lora.rank,
                       "optim.lr": o.lr, "optim.warmup_steps": o.warmup_steps, "rollout.episode_wall_s": r.episode_wall_s,
                       "rollout.max_repeats": r.max_repeats, "rollout.max_env_timeouts": r.max_env_timeouts,
                       "rollout.patience": r.patience, "rollout.context_budget": r.context_budget,
                       "rollout.infra_retries": r.infra_retries}.items():
        if value < 0:
            raise ConfigError(f"{key} must not be negative, got {value}")
    for key in ("rollout_cpus", "sandbox_cpus", "rollout_gpus"):
        if getattr(cfg.scheduler, key) < 0:
            raise ConfigError(f"scheduler.{key} must not be negative, got {getattr(cfg.scheduler, key)}")


def _rollout(cfg: Config, recipe: Recipe) -> None:
    a, r = cfg.algorithm, cfg.rollout
    if cfg.train.epochs < 0 or (cfg.train.epochs and recipe.kind == "rl"):
        raise ConfigError(f"train.epochs is passes over an offline data file (sft, dpo, reward_model), >= 0, got "
                          f"{cfg.train.epochs} for {cfg.algorithm.name!r}: an rl run is sized by train.steps")
    if r.env_step_s <= 0:
        raise ConfigError(f"rollout.env_step_s is the deadline of one env step and must be positive, got {r.env_step_s}")
    if r.max_staleness not in (0, 1):
        raise ConfigError(f"rollout.max_staleness is 0 (on-policy) or 1 (one step off-policy), got {r.max_staleness}")
    if r.max_staleness and cfg.reward.model_update_every:
        raise ConfigError("rollout.max_staleness 1 samples in the background, where a reward model retraining during "
                          "the run would race with it: set reward.model_update_every 0 or max_staleness 0")
    if r.max_staleness and cfg.scheduler.backend != "local":
        raise ConfigError("rollout.max_staleness 1 runs with scheduler.backend local for now: its rollout copy of the "
                          "policy lives in this process")
    if r.pipeline == "overlap" and r.max_turns == 1:
        raise ConfigError("rollout.pipeline overlap interleaves the turns of multi-turn episodes: set rollout.max_turns "
                          "above 1, or use pipeline rounds (single-turn sampling already batches continuously)")
    if r.context_budget and r.max_turns == 1:
        raise ConfigError("rollout.context_budget compresses the conversation between turns: set rollout.max_turns above 1")
    if r.context_budget and (recipe.needs_critic or (a.kl_in == "reward" and a.beta > 0)):
        raise ConfigError("rollout.context_budget trains later stretches of an episode on their own prompts, which "
                          "ppo's critic and a KL penalty in the reward do not cover yet: use grpo-style algorithms with "
                          "algorithm.kl_in loss, or set rollout.context_budget 0")


def _algorithm(cfg: Config, recipe: Recipe) -> None:
    a, r = cfg.algorithm, cfg.rollout
    if a.kl_target is not None and a.beta <= 0:
        raise ConfigError("algorithm.kl_target adapts the KL coefficient, which starts at algorithm.beta: "
                          "set algorithm.beta > 0 (e.g. 0.01) or remove kl_target")
    if a.overlong_buffer > r.max_new_tokens * r.max_turns:
        raise ConfigError(f"algorithm.overlong_buffer ({a.overlong_buffer}) is longer than the token budget "
                          f"({r.max_new_tokens * r.max_turns}): make it smaller")
    if r.group_size < recipe.min_group_size:
        raise ConfigError(f"{a.name}'s advantages compare each attempt with the others in its group: "
                          f"set rollout.group_size >= {recipe.min_group_size}")
    _only_for(cfg, "critic", CriticConfig(), lambda x: x.needs_critic, "only {names} has a critic")
    _only_for(cfg, "preference", PreferenceConfig(), lambda x: x.preference, "only {names} uses preference settings")
    _only_for(cfg, "reward", RewardConfig(), lambda x: x.kind == "rl", "rewards apply to RL only")
    _only_for(cfg, "data", DataConfig(), lambda x: x.kind == "offline", "RL draws its tasks from env.id, not from data")


def _reward(cfg: Config) -> None:
    w = cfg.reward
    if w.model_weight > 0 and not w.model:
        raise ConfigError("reward.model_weight > 0 needs reward.model: the directory of a model trained with "
                          "algorithm.name reward_model")
    if w.model and w.model_weight <= 0:
        raise ConfigError("reward.model is set but reward.model_weight is 0, so it would be loaded and ignored: "
                          "give it a weight or remove it")
    if w.model_update_every < 0:
        raise ConfigError(f"reward.model_update_every must not be negative, got {w.model_update_every}")
    if w.model_update_every > 0 and not w.model:
        raise ConfigError("reward.model_update_every retrains a reward model, but reward.model is not set: "
                          "set reward.model and reward.model_weight, or remove model_update_every")


def _offline(cfg: Config, recipe: Recipe) -> None:
    a = cfg.algorithm
    if not cfg.data.path:
        raise ConfigError(f"algorithm {a.name} trains on a data file: set data.path (make one with "
                          f"`temper data {recipe.data} --env ENV --out FILE`)")
    if a.beta > 0:
        raise ConfigError(f"algorithm.beta is RL's KL coefficient; {a.name} does not use it"
                          + (f": set preference.beta for {a.name}" if recipe.preference else ": remove it"))
    _streaming(cfg)


def _streaming(cfg: Config) -> None:
    """A streamed corpus's length is known only once read: train.epochs ends the run, not sizes it."""
    epochs = cfg.train.epochs
    if not cfg.data.streaming or not epochs:
        return
    if epochs != int(epochs):
        raise ConfigError(f"train.epochs must be a whole number with data.streaming, got {epochs}: a streamed "
                          f"corpus's length is known only once it is read, so part of a pass cannot be sized")
    if cfg.optim.schedule == "cosine":
        raise ConfigError("optim.schedule cosine ends at the last step, but with data.streaming and train.epochs the "
                          "steps are known only once the data is read: set train.epochs 0 and train.steps, or "
                          "optim.schedule constant")
