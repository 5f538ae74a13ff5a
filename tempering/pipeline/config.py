"""The pipeline's configuration: one YAML for baseline eval -> demonstrations -> SFT -> RL -> eval.

    name, seed, model          shared by every stage
    options                    env id -> constructor options, the same in every stage
    eval                       what is measured before and after each training stage
    demos                      the verified demonstrations SFT trains on (token budget, mix)
    sft, rl                    each a training config's sections (algorithm, optim, data or
                               env and rollout, train ...); the pipeline fills in the model,
                               the data file, the env options and the seed

`--set sft.train.max_minutes=5` reaches any key, as for `temper train`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tempering.config import Config, build, from_dict, merge, parse_set
from tempering.config.load import read_yaml
from tempering.errors import ConfigError


@dataclass(frozen=True)
class EnvEval:
    n: int = 100
    """Held-out tasks per split."""
    max_turns: int = 1
    """Replies per episode (each wrong one gets the env's feedback); 1 is the first answer alone."""
    max_new_tokens: int = 0
    """Tokens per reply; 0 takes eval.max_new_tokens."""
    splits: tuple[str, ...] = ()
    """Splits to evaluate; empty takes eval.splits (those the env has)."""


@dataclass(frozen=True)
class PipelineEval:
    envs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Env id -> EnvEval fields: the domains trained on and measured at every stage."""
    watch: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Env id -> EnvEval fields: measured at every stage, in no demonstration mix and no RL mix
    (HumanEval; the arithmetic regression set). One listed in demos.sampled as well is
    replayed in SFT (the base model's own replies), and the report says so."""
    splits: tuple[str, ...] = ("test", "unseen")
    """Held-out splits measured per env: test (new instances) and unseen (held-out schemas, families, layouts)."""
    max_new_tokens: int = 160
    """Default tokens per reply."""
    batch_size: int = 16
    """Prompts generated together in single-turn evaluation."""
    engine: str = "hf"
    """What generates the evaluations' replies: hf, vllm or auto (as rollout.engine; greedy fp32 replies are the same tokens)."""


@dataclass(frozen=True)
class Sampled:
    tokens: int = 10_000
    """Tokens of the base model's own verified replies to keep for this env."""
    samples: int = 1
    """Replies drawn per train task; the first that scores 1 is kept."""
    temperature: float = 0.0
    """0 is greedy (SmolLM2-135M passes far more often greedy than at 0.7)."""
    max_new_tokens: int = 160
    """Tokens per reply, as the env is evaluated with."""
    max_tasks: int = 2000
    """Train tasks tried at most."""
    start: int = 0
    """First train task index; past the reference demonstrations' (demos.json's tasks_tried) to keep the tasks apart."""
    keep: str = "passed"
    """passed: replies that score 1 (the model's skill, in its words). failed: a reply that fails,
    kept as context (weight 0) before the env's feedback and the reference fix (self_repair)."""


@dataclass(frozen=True)
class Demos:
    tokens: int = 100_000
    """Demonstration tokens in all (training time is proportional to them), split by mix weight."""
    mix: dict[str, float] = field(default_factory=dict)
    """Env id -> weight; empty takes every env of eval.envs at weight 1."""
    kinds: dict[str, float] = field(default_factory=lambda: {"single": 1.0, "repair": 1.0, "tool": 1.0})
    """single (prompt, reference), worked (the reference with its working), repair (wrong try, real
    feedback, fix), tool (tool calls, answer): weights."""
    sampled: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Env id -> Sampled fields: the base model's own replies to train tasks, kept where they
    score 1, so SFT keeps a skill the base model has, or where they fail, as the start of a
    repair (keep: failed); on top of `tokens`."""


@dataclass(frozen=True)
class PipelineConfig:
    name: str = "pipeline"
    """Pipeline name; the run directory defaults to runs/<name>."""
    seed: int = 0
    """Seed of every stage."""
    model: str = "tiny-random"
    """The base model: a preset or a Hugging Face directory."""
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Env id -> constructor options (e.g. difficulty), the same for demos, RL and eval."""
    eval: PipelineEval = field(default_factory=PipelineEval)
    demos: Demos = field(default_factory=Demos)
    sft: dict[str, Any] = field(default_factory=dict)
    """The SFT stage: sections of a training config (algorithm, data, optim, train, lora)."""
    rl: dict[str, Any] = field(default_factory=dict)
    """The RL stage: sections of a training config (env.mix, rollout, algorithm, optim, train)."""

    def env_evals(self, group: str = "envs") -> dict[str, EnvEval]:
        table = self.eval.envs if group == "envs" else self.eval.watch
        return {env_id: build(EnvEval, spec or {}) for env_id, spec in table.items()}

    def sampled(self) -> dict[str, Sampled]:
        return {env_id: build(Sampled, spec or {}) for env_id, spec in self.demos.sampled.items()}

    def demo_mix(self) -> dict[str, float]:
        return dict(self.demos.mix) or {env_id: 1.0 for env_id in self.eval.envs}

    def stage_config(self, stage: str, model: str, **fill: Any) -> Config:
        """The training Config of stage `sft` or `rl`: its section, the shared model, seed and
        env options, and `fill` (e.g. data={"path": ...})."""
        section = self.sft if stage == "sft" else self.rl
        base: dict = {"name": f"{self.name}-{stage}", "seed": self.seed, "model": {"name": model}}
        data = merge(merge(base, section), fill)
        if stage == "sft":
            data = merge({"algorithm": {"name": "sft"}}, data)
        else:
            env = data.get("env", {})
            mix = env.get("mix") or {e: 1.0 for e in self.eval.envs}
            data = merge(data, {"env": {"id": "mix" if len(mix) > 1 else next(iter(mix)),
                                        "mix": mix if len(mix) > 1 else {},
                                        "options": {e: o for e, o in self.options.items() if e in mix}}})
        try:
            return from_dict(data)
        except ConfigError as e:
            raise ConfigError(f"pipeline section {stage}: {e}") from None


def load_pipeline(path: str | Path, overrides: list[str] | None = None) -> tuple[PipelineConfig, dict]:
    """The pipeline config and the plain dict it came from (written to the run directory)."""
    data = merge(read_yaml(path, "pipeline config", "configs/tiny-pipeline.yaml"), parse_set(overrides or []))
    cfg = build(PipelineConfig, data)
    if not cfg.eval.envs:
        raise ConfigError("the pipeline measures nothing: list the domains under eval.envs (env id -> {n, max_turns})")
    cfg.sampled()  # a misspelt field fails now too
    for stage in ("sft", "rl"):
        cfg.stage_config(stage, cfg.model)  # fail now, not after an hour of baseline eval
    return cfg, data
