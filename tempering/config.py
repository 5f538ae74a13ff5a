"""Typed run configuration: frozen dataclasses, loaded from YAML plus `--set` overrides.

The dataclasses are the one source of truth: YAML keys, `--set section.key=value` and the
list of valid keys in error messages are all derived from them.
"""

from __future__ import annotations

import dataclasses
import types
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
    device: str = "auto"
    """Where the policy, reference, critic and reward model live: cpu, cuda, cuda:N, or auto (cuda when present)."""


@dataclass(frozen=True)
class EnvConfig:
    id: str = "math/arith-v1"
    """Environment id from `temper envs list`."""
    split: str = "train"
    """Training split; evaluation always uses `test`."""
    mix: dict[str, float] = field(default_factory=dict)
    """Multi-domain training: env id -> weight; each step's prompts split across them in these proportions (set id: mix)."""
    imports: tuple[str, ...] = ()
    """Python modules to import first: each registers envs of your own (tempering.envs.register; docs/domains.md)."""
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Constructor options per env id, e.g. {sql/sqlite-v1: {difficulty: 2}} (the keyword arguments of its constructor)."""


@dataclass(frozen=True)
class RolloutConfig:
    prompts_per_step: int = 8
    """Prompts sampled per generation round."""
    group_size: int = 8
    """Completions per prompt (the GRPO group)."""
    temperature: float = 0.7
    """Sampling temperature. Small models sample far below their greedy accuracy at 1.0."""
    top_p: float = 1.0
    """Nucleus sampling: keep the smallest set of tokens whose probability reaches top_p."""
    max_new_tokens: int = 64
    """Token budget per model turn."""
    min_informative_groups: int = 4
    """Dynamic sampling: keep generating until this many groups have reward variance."""
    max_rounds_per_step: int = 3
    """Cap on generation rounds spent filling one update's informative groups."""
    max_turns: int = 1
    """Turns per episode; above 1, each attempt is a multi-turn episode (e.g. code/repair-v1)."""
    max_staleness: int = 0
    """0: sample, then train on it; 1: sample step k+1 (from the weights before update k) while step k trains, ratios taken against the sampling log-probs."""
    pipeline: str = "rounds"
    """Multi-turn episodes: rounds (all generate, then all envs step) or overlap (envs step while others generate)."""
    env_step_s: float = 120.0
    """Deadline of one env step (sandbox run, verifier); past it the episode ends as env_timeout."""
    episode_wall_s: float = 0.0
    """End an episode after this many seconds (wall_time); 0 means no limit."""
    max_repeats: int = 0
    """End an episode after this many identical replies in a row (repeated_action); 0 disables."""
    max_env_timeouts: int = 0
    """End an episode after this many sandbox timeouts in a row (timeouts); 0 disables."""
    patience: int = 0
    """End an episode after this many turns without new best progress (no_progress); 0 disables."""
    context_budget: int = 0
    """Multi-turn: past this many tokens the conversation is compressed by the env (goal, key decisions, latest errors) and the episode goes on from that shorter prompt; each stretch trains with the attempt's advantage. 0 keeps the whole conversation."""


@dataclass(frozen=True)
class AlgorithmConfig:
    name: str = "grpo"
    """grpo, dr_grpo, dapo, rloo, reinforce_pp or ppo (RL on an env); sft, dpo or reward_model (on data)."""
    clip_eps: float = 0.2
    """PPO ratio clip below 1 (and above 1 unless clip_eps_high is set)."""
    clip_eps_high: float | None = None
    """Upper ratio clip (DAPO's clip-higher); default: 0.28 for dapo, else clip_eps."""
    loss_agg: str | None = None
    """token_mean, seq_mean_token_mean or seq_mean_token_sum_norm; default: grpo seq_mean_token_mean, dr_grpo seq_mean_token_sum_norm, else token_mean."""
    beta: float = 0.0
    """KL coefficient to the frozen reference model; 0 disables the reference."""
    kl_estimator: str = "k3"
    """k1, k2 or k3 (Schulman's estimators)."""
    kl_in: str | None = None
    """Where the KL penalty goes: loss or reward; default: reward for ppo, else loss."""
    kl_target: float | None = None
    """Adaptive KL: move beta toward this mean per-token KL each step; unset keeps beta fixed."""
    kl_horizon: int = 10000
    """Adaptive KL: steps over which beta may change by a factor of e^0.2 at most."""
    entropy_coef: float = 0.0
    """Entropy bonus: subtract this times the mean token entropy from the loss."""
    epochs: int = 1
    """Optimiser passes over each batch of rollouts."""
    drop_zero_variance: bool | None = None
    """Dynamic sampling: drop groups whose rewards are all equal and refill; default: true for dapo."""
    overlong_filter: bool | None = None
    """Leave responses cut at max_new_tokens out of the loss; default: true for dapo."""
    overlong_buffer: int | None = None
    """Soft length penalty over the last N tokens before max_new_tokens; default: max_new_tokens // 4 for dapo, else 0 (off)."""
    overlong_penalty: float = 1.0
    """Reward subtracted at the length limit (linear over the buffer)."""


@dataclass(frozen=True)
class CriticConfig:
    """PPO only: the value model (the policy's weights with a fresh scalar head) and GAE."""

    lr: float = 1.0e-5
    """Critic learning rate."""
    gamma: float = 1.0
    """Discount per token."""
    lam: float = 0.95
    """GAE lambda: 1 is the Monte Carlo return, 0 one-step TD."""
    value_clip: float = 0.2
    """Clip new values to within this of the rollout's values in the value loss."""


@dataclass(frozen=True)
class PreferenceConfig:
    """dpo only."""

    beta: float = 0.1
    """Strength of the pull toward the reference (DPO's beta; IPO's margin is 1 / (2 beta))."""
    loss: str = "dpo"
    """dpo (sigmoid) or ipo."""


@dataclass(frozen=True)
class RewardConfig:
    """How RL turns an attempt into a reward: the env's verifier, a reward model, or both."""

    verifier_weight: float = 1.0
    """Weight of the env's verifier score."""
    model: str = ""
    """Reward-model directory (trained with algorithm.name reward_model); empty for none."""
    model_weight: float = 0.0
    """Weight of the reward model's score (needs reward.model)."""
    model_update_every: int = 0
    """Retrain the reward model every N steps on pairs from fresh groups (a passing and a failing attempt); 0 never."""


@dataclass(frozen=True)
class DataConfig:
    """sft, dpo and reward_model: the training data."""

    path: str = ""
    """JSONL or Parquet: rows of chat `messages` (sft) or `prompt`, `chosen`, `rejected` (dpo, reward_model)."""
    max_len: int = 512
    """Tokens per example; longer ones are cut (sft) or dropped (pairs)."""
    batch_size: int = 8
    """Examples (or pairs) per micro-batch."""
    packing: bool = False
    """sft: pack several examples into each row up to max_len (no padding waste)."""
    shuffle: bool = True
    """Shuffle each epoch (seeded by seed and epoch)."""


@dataclass(frozen=True)
class LoraConfig:
    """LoRA adapters via PEFT, for any trainer; rank 0 trains all weights."""

    rank: int = 0
    """Adapter rank; 0 disables LoRA."""
    alpha: float = 16.0
    """Scale numerator: updates are scaled by alpha / rank."""
    dropout: float = 0.0
    """Dropout on the adapter input."""
    targets: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Module names that get adapters."""


@dataclass(frozen=True)
class OptimConfig:
    lr: float = 2e-5
    """Peak learning rate (AdamW)."""
    betas: tuple[float, float] = (0.9, 0.99)
    """AdamW moment decay rates."""
    weight_decay: float = 0.0
    """AdamW decoupled weight decay."""
    warmup_steps: int = 2
    """Linear warm-up updates before the schedule."""
    schedule: str = "constant"
    """constant or cosine (decays to min_lr_ratio * lr at train.steps)."""
    min_lr_ratio: float = 0.0
    """Cosine floor as a fraction of lr."""
    grad_clip: float = 1.0
    """Max global gradient norm."""
    grad_accum: int = 1
    """Micro-batches per optimiser step (sft, dpo, reward_model)."""


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 2
    """Optimiser steps to run (the --steps flag overrides it)."""
    max_minutes: float = 0.0
    """Stop after this many minutes of training; 0 means no time limit."""
    save_every: int = 1
    """Checkpoint every N steps (and always at the end)."""
    keep_checkpoints: int = 2
    """Most recent checkpoints kept on disk."""
    curriculum: bool = True
    """Sample task families in proportion to how often they give informative groups."""
    replay: float = 0.0
    """Share of prompts that revisit earlier tasks with mixed outcomes (weighted by p(1-p) of their pass rate)."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass: less memory, about a third more time."""


@dataclass(frozen=True)
class SchedulerConfig:
    backend: str = "local"
    """Where rollouts run: local (this process) or ray (rollout and sandbox workers as Ray actors)."""
    address: str | None = None
    """Ray cluster to join (e.g. ray://head:10001 or auto); unset starts a local Ray instance."""
    rollout_workers: int = 2
    """Ray: actors that each hold a copy of the policy and sample a shard of the prompts."""
    sandbox_workers: int = 2
    """Ray: actors that run env steps and verifiers."""
    env_workers: int = 8
    """Threads per process that run env steps concurrently (sandbox runs release the GIL)."""
    rollout_cpus: float = 0.5
    """Ray: CPUs each rollout worker reserves (Ray sets its torch thread count from this)."""
    sandbox_cpus: float = 0.5
    """Ray: CPUs each sandbox worker reserves."""
    rollout_gpus: float = 0.0
    """Ray: GPUs each rollout worker reserves; above 0 its copy of the policy runs on a GPU."""


@dataclass(frozen=True)
class EvalConfig:
    n: int = 200
    """Held-out tasks per evaluation."""
    max_new_tokens: int = 64
    """Token budget per evaluated answer."""
    batch_size: int = 32
    """Prompts generated together."""


@dataclass(frozen=True)
class Config:
    name: str = "run"
    """Run name; the run directory defaults to runs/<name>."""
    seed: int = 0
    """Every random choice (sampling, data order, task draws) derives from this and the step."""
    model: ModelConfig = field(default_factory=ModelConfig)
    env: EnvConfig = field(default_factory=EnvConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    algorithm: AlgorithmConfig = field(default_factory=AlgorithmConfig)
    critic: CriticConfig = field(default_factory=CriticConfig)
    preference: PreferenceConfig = field(default_factory=PreferenceConfig)
    reward: RewardConfig = field(default_factory=RewardConfig)
    data: DataConfig = field(default_factory=DataConfig)
    lora: LoraConfig = field(default_factory=LoraConfig)
    optim: OptimConfig = field(default_factory=OptimConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    scheduler: SchedulerConfig = field(default_factory=SchedulerConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)


@dataclass(frozen=True)
class Recipe:
    """One algorithm: everything that depends on `algorithm.name` is read from its row in RECIPES."""

    kind: str
    """rl (samples from env.id and learns from rewards) or offline (trains on data.path)."""
    summary: str
    """What it trains, in one line (`temper settings`, docs/algorithms.md)."""
    estimator: str = ""
    """rl: the advantage estimator, a key of algorithms.ADVANTAGES, or gae (over a learned critic)."""
    defaults: dict[str, Any] = field(default_factory=dict)
    """What None means for an algorithm setting under this recipe; keys left out fall back to FALLBACK_DEFAULTS."""
    min_group_size: int = 1
    """Fewest attempts per prompt the estimator works with (rollout.group_size)."""
    data: str = ""
    """offline: the `temper data` kind that writes its file (sft or pairs)."""
    head: str = "causal"
    """The model trained: causal (a language model) or reward (a scalar score head)."""
    preference: bool = False
    """Reads the preference.* settings (its own beta and loss)."""

    @property
    def needs_critic(self) -> bool:
        """GAE needs a learned value per token: the critic.* settings and a value model."""
        return self.estimator == GAE


GAE = "gae"
"""The estimator name of PPO's generalised advantage estimation over the critic's values."""

RECIPES: dict[str, Recipe] = {
    "grpo": Recipe("rl", "policy, group-normalised advantages (r - mean) / std", "grpo",
                   {"loss_agg": "seq_mean_token_mean"}),
    "dr_grpo": Recipe("rl", "policy, centred advantages r - mean", "dr_grpo", {"loss_agg": "seq_mean_token_sum_norm"}),
    "dapo": Recipe("rl", "policy, GRPO's advantages, with clip-higher, dynamic sampling and overlong shaping", "grpo",
                   {"clip_eps_high": 0.28, "drop_zero_variance": True, "overlong_filter": True,
                    "overlong_buffer": "quarter"}),
    "rloo": Recipe("rl", "policy, leave-one-out baseline", "rloo", min_group_size=2),
    "reinforce_pp": Recipe("rl", "policy, group-centred, batch-normalised advantages", "reinforce_pp"),
    "ppo": Recipe("rl", "policy + critic (critic.*), GAE", GAE, {"kl_in": "reward"}),
    "sft": Recipe("offline", "policy on chat rows (data.*), assistant tokens only", data="sft"),
    "dpo": Recipe("offline", "policy on preference pairs vs the frozen start (preference.*)", data="pairs",
                  preference=True),
    "reward_model": Recipe("offline", "scalar-head model, Bradley-Terry on pairs", data="pairs", head="reward"),
}
"""Every algorithm by `algorithm.name`; adding one is a row here (and, for rl, an estimator in
algorithms.ADVANTAGES). "quarter" in defaults means rollout.max_new_tokens // 4."""

FALLBACK_DEFAULTS: dict[str, Any] = {
    "clip_eps_high": None, "loss_agg": "token_mean", "kl_in": "loss", "drop_zero_variance": False,
    "overlong_filter": False, "overlong_buffer": 0,
}
"""What None means for an algorithm setting its recipe leaves out. The resolved values are
what a run records in its config.yaml."""


def resolve(config: Config) -> Config:
    """Fill the algorithm settings left unset with the algorithm's own defaults."""
    a = config.algorithm
    preset = {**FALLBACK_DEFAULTS, **(RECIPES[a.name].defaults if a.name in RECIPES else {})}
    changes = {k: v for k, v in preset.items() if getattr(a, k) is None}
    if changes.get("clip_eps_high", 0) is None:
        changes["clip_eps_high"] = a.clip_eps
    if changes.get("overlong_buffer") == "quarter":
        changes["overlong_buffer"] = config.rollout.max_new_tokens // 4
    return dataclasses.replace(config, algorithm=dataclasses.replace(a, **changes)) if changes else config


def field_docs(cls: type) -> dict[str, str]:
    """The one-line docstring under each field of a config dataclass."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[node.target.id] = str(nxt.value.value).strip()
    return docs


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
    if origin in (typing.Union, types.UnionType):  # X | None: unset means "the algorithm's default"
        if value is None:
            return None
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
        origin = typing.get_origin(hint)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"config key {key!r} takes a mapping, e.g. {{math/arith-v1: 1.0, code/synth-v1: 1.0}}, "
                              f"got {value!r}")
        k_hint, v_hint = typing.get_args(hint)
        return {_coerce(k, k_hint, key): _coerce(v, v_hint, f"{key}.{k}") for k, v in value.items()}
    if origin is tuple and len(typing.get_args(hint)) == 2 and typing.get_args(hint)[1] is Ellipsis:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key {key!r} takes a list, got {value!r}")
        return tuple(_coerce(v, typing.get_args(hint)[0], key) for v in value)
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
    return resolve(_build(Config, _merge(data, parse_set(overrides or [])), ""))


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
