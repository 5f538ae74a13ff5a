"""The algorithms, one row each: what every part of the trainer reads instead of comparing
`algorithm.name` to a literal. See docs/algorithms.md."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from tempering.config.schema import Config
from tempering.errors import ConfigError

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


DYNAMIC_SAMPLING = ("min_informative_groups", "max_rounds_per_step")
"""rollout settings only dynamic sampling (algorithm.drop_zero_variance) reads."""


def resolve(config: Config) -> Config:
    """Fill the algorithm settings left unset with the algorithm's own defaults."""
    a = config.algorithm
    preset = {**FALLBACK_DEFAULTS, **(RECIPES[a.name].defaults if a.name in RECIPES else {})}
    changes = {k: v for k, v in preset.items() if getattr(a, k) is None}
    _check_dynamic_sampling(config, changes.get("drop_zero_variance"))
    _check_engine(config.rollout)
    if changes.get("clip_eps_high", 0) is None:
        changes["clip_eps_high"] = a.clip_eps
    if changes.get("overlong_buffer") == "quarter":
        changes["overlong_buffer"] = config.rollout.max_new_tokens // 4
    return dataclasses.replace(config, algorithm=dataclasses.replace(a, **changes)) if changes else config


def _check_dynamic_sampling(config: Config, default_drop: bool | None) -> None:
    """A config that sets a dynamic-sampling key while the algorithm's default leaves dynamic
    sampling off would have that key silently unread (each step one round, every group
    trained): make the choice explicit. An explicit drop_zero_variance false is a choice, and
    the keys it leaves unread (a shared base config's, say) are allowed."""
    defaults = type(config.rollout)()
    changed = [k for k in DYNAMIC_SAMPLING if getattr(config.rollout, k) != getattr(defaults, k)]
    if changed and default_drop is False:
        raise ConfigError(
            f"rollout.{changed[0]} is set, but only dynamic sampling reads it, and {config.algorithm.name} leaves "
            f"it off: set algorithm.drop_zero_variance true to train only on groups with reward variance, "
            f"sampling more rounds to find them, or false to train on every group of one round (and remove "
            f"rollout.{changed[0]}, which is then unused)")


def _check_engine(r) -> None:
    """rollout.engine and its settings name things that exist (whether vLLM is installed is
    checked when the engine starts, with the model in hand)."""
    if r.engine not in ("hf", "vllm", "auto"):
        raise ConfigError(f"unknown rollout.engine {r.engine!r}: use hf, vllm or auto")
    if r.engine_dtype not in (None, "float32", "bfloat16", "float16"):
        raise ConfigError(f"unknown rollout.engine_dtype {r.engine_dtype!r}: use float32, bfloat16 or float16")
    if r.tis_cap < 0:
        raise ConfigError(f"rollout.tis_cap is {r.tis_cap}: use 0 (no correction) or a cap >= 1, e.g. 2")
    if r.engine != "hf" and r.max_staleness:
        raise ConfigError("rollout.max_staleness 1 samples ahead from a frozen copy of the policy, which only the hf "
                          "engine has: set rollout.engine=hf, or rollout.max_staleness=0 with vllm")
