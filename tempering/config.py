"""Typed run configuration: frozen dataclasses, loaded from YAML plus `--set` overrides.

The dataclasses are the one source of truth: YAML keys, `--set section.key=value` and the
list of valid keys in error messages are all derived from them.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tempering.errors import ConfigError


@dataclass(frozen=True)
class ModelConfig:
    name: str = "tiny-random"
    """A preset (smollm2-135m-instruct, tiny-random) or a Hugging Face model directory."""
    dtype: str = "float32"
    """float32 on CPU; bfloat16 where the device supports it."""


@dataclass(frozen=True)
class EnvConfig:
    id: str = "math/arith-v1"
    """Environment id from `temper envs list`."""
    split: str = "train"
    """Training split; evaluation always uses `test`."""


@dataclass(frozen=True)
class RolloutConfig:
    prompts_per_step: int = 8
    """Prompts sampled per generation round."""
    group_size: int = 8
    """Completions per prompt (the GRPO group)."""
    temperature: float = 0.7
    """Sampling temperature. Small models sample far below their greedy accuracy at 1.0."""
    top_p: float = 1.0
    max_new_tokens: int = 64
    min_informative_groups: int = 4
    """Dynamic sampling: keep generating until this many groups have reward variance."""
    max_rounds_per_step: int = 3
    """Cap on generation rounds spent filling one update's informative groups."""


@dataclass(frozen=True)
class AlgorithmConfig:
    name: str = "grpo"
    """Advantage estimator and loss family; the skeleton implements grpo."""
    clip_eps: float = 0.2
    """PPO ratio clip."""
    beta: float = 0.0
    """KL coefficient to the frozen reference model; 0 disables the reference."""
    kl_estimator: str = "k3"
    """k1, k2 or k3 (Schulman's estimators)."""
    scale_rewards: bool = True
    """Divide group-centred rewards by the group std (GRPO); False gives Dr. GRPO's centring."""
    epochs: int = 1
    """Passes over each batch of rollouts."""
    drop_zero_variance: bool = True
    """Drop groups whose rewards are all equal: they carry no gradient."""


@dataclass(frozen=True)
class OptimConfig:
    lr: float = 2e-5
    betas: tuple[float, float] = (0.9, 0.99)
    weight_decay: float = 0.0
    warmup_steps: int = 2
    """Linear warm-up updates before the constant learning rate."""
    grad_clip: float = 1.0


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 2
    """Policy updates to run (the --steps flag overrides it)."""
    max_minutes: float = 0.0
    """Stop after this many minutes of training; 0 means no time limit."""
    save_every: int = 1
    """Checkpoint every N steps (and always at the end)."""
    keep_checkpoints: int = 2
    """Most recent checkpoints kept on disk."""
    curriculum: bool = True
    """Sample task families in proportion to how often they give informative groups."""


@dataclass(frozen=True)
class EvalConfig:
    n: int = 200
    """Held-out tasks per evaluation."""
    max_new_tokens: int = 64
    batch_size: int = 32


@dataclass(frozen=True)
class Config:
    name: str = "run"
    """Run name; the run directory defaults to runs/<name>."""
    seed: int = 0
    model: ModelConfig = field(default_factory=ModelConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)


def valid_keys(cls: type = Config, prefix: str = "") -> list[str]:
    """Every dotted key the config accepts, e.g. `rollout.temperature`."""
    keys = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            keys += valid_keys(hints[f.name], f"{prefix}{f.name}.")
        else:
            keys.append(prefix + f.name)
    return keys


def _coerce(value: Any, hint: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key {key!r} takes a list, got {value!r}")
        return tuple(_coerce(v, a, key) for v, a in zip(value, typing.get_args(hint)))
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"config key {key!r} takes true or false, got {value!r}")
        return value
    if hint is float and isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            return float(value)  # YAML reads 1e-4 (no dot) as a string
        except ValueError:
            pass
    if hint in (int, float, str) and (isinstance(value, bool) or not isinstance(value, hint)):
        raise ConfigError(f"config key {key!r} takes a {hint.__name__}, got {value!r}")
    return value


def _build(cls: type, data: dict, prefix: str) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"config section {prefix.rstrip('.') or 'top level'} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise ConfigError(
            f"unknown config key '{prefix}{unknown[0]}'. Valid keys: {', '.join(valid_keys(Config))}"
        )
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value or {}, f"{prefix}{name}.")
        else:
            kwargs[name] = _coerce(value, hint, prefix + name)
    return cls(**kwargs)


def parse_set(items: list[str]) -> dict:
    """Turn ["a.b=1", "c=x"] into a nested dict; values are parsed as YAML scalars."""
    tree: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"malformed --set {item!r}: write --set section.key=value, e.g. --set rollout.temperature=0.7")
        try:
            value = yaml.safe_load(raw) if raw else ""
        except yaml.YAMLError:
            value = raw
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r} conflicts with another --set for {part!r}")
        node[leaf] = value
    return tree


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Read a YAML config (or start from defaults) and apply `--set` overrides."""
    data: dict = {}
    if path is not None:
        path = Path(path)
        if not path.is_file():
            raise ConfigError(f"config file {str(path)!r} not found: pass a YAML file such as configs/tiny-cpu.yaml")
        try:
            data = yaml.safe_load(path.read_text()) or {}
        except yaml.YAMLError as e:
            raise ConfigError(f"config file {str(path)!r} is not valid YAML: {e}") from None
    return _build(Config, _merge(data, parse_set(overrides or [])), "")


def to_dict(config: Any) -> dict:
    """Plain nested dict (tuples as lists) for writing config.yaml."""
    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    return plain(dataclasses.asdict(config))


def replace(config: Config, **sections: dict) -> Config:
    """Copy of config with some fields of some sections changed: replace(c, train={"steps": 4})."""
    return dataclasses.replace(
        config, **{name: dataclasses.replace(getattr(config, name), **kw) for name, kw in sections.items()}
    )
