"""The run configuration's schema: one frozen dataclass per section, each field with its
default and a docstring under it (`temper settings` prints them)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


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
    heldback: float = 0.0
    """Share of passing single-turn answers re-scored by their env's stronger check (code/synth-v1: 30 new inputs); the disagreement is a hacking signal (hack/heldback_*)."""


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
    """Groups with reward variance to gather per update; read only with algorithm.drop_zero_variance."""
    max_rounds_per_step: int = 3
    """Cap on generation rounds spent filling one update's informative groups (dynamic sampling only)."""
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
    engine: str = "hf"
    """What samples: hf (Tempering's own decode loop, bitwise deterministic), vllm (vLLM in this process, weights synced and checked after every update), or auto (vllm when installed and able to serve the model here, else hf)."""
    engine_dtype: str | None = None
    """vLLM's weight dtype: float32 or bfloat16; default the model's. Sampling in another precision than training is corrected by tis_cap."""
    engine_kv_gib: float = 2.0
    """vLLM: memory for its KV cache, GiB (allocated when the engine starts)."""
    tis_cap: float = 2.0
    """When vllm samples: each token's loss is weighted by min(pi_trainer / pi_sampler, tis_cap) (truncated importance sampling); 0 turns the correction off. The mismatch is logged as rollout/logprob_diff_*."""
    context_budget: int = 0
    """Multi-turn: past this many tokens the conversation is compressed by the env (goal, key decisions, latest errors) and the episode goes on from that shorter prompt; each stretch trains with the attempt's advantage. 0 keeps the whole conversation."""
    infra_retries: int = 2
    """Re-runs of a verification or env step whose sandbox failed (sandbox_error, SandboxUnavailable), on the same reply; an attempt still failing is left out of its group's statistics and the loss (infra/failed)."""


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
    shuffle: bool = False
    """Spurious-reward control: permute each group's rewards before advantages (the same rewards, no information on which attempt earned which); a real run must beat it."""


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
    streaming: bool = False
    """Read, tokenize and train on rows as they arrive (shuffled within shuffle_buffer) instead of reading all of them before step 1; train.epochs then ends the run when read (docs/storage.md)."""
    shuffle_buffer: int = 1000
    """data.streaming: examples held and drawn from at random; step 1 waits for this many, memory holds this many."""


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
class BudgetConfig:
    cpu_hours: float = 0.0
    """Stop cleanly, with a checkpoint, before a step would take the run past this many CPU-hours (user + system time of the trainer and everything it started); 0: no limit."""
    gpu_hours: float = 0.0
    """The same for GPU-hours (wall time x GPUs in use); 0: no limit."""
    price_per_hour: float = 0.0
    """Price of one CPU-hour (or GPU-hour when GPUs are in use), to report the run's cost; 0: not reported."""


@dataclass(frozen=True)
class TrainConfig:
    steps: int = 2
    """Optimiser steps to run (the --steps flag overrides it)."""
    epochs: float = 0.0
    """Offline recipes: passes over the data file; > 0 sets the steps (ceil(epochs x rows / (batch_size x grad_accum))) so a cosine schedule ends with the data."""
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
    budget: BudgetConfig = field(default_factory=BudgetConfig)
    """Compute budget: CPU-hours, GPU-hours, price per hour."""
    stop_on: tuple[str, ...] = ("sync",)
    """Alert kinds that stop the run cleanly, with a checkpoint: nan, kl, reward_collapse, entropy_collapse, length_drift, canary, heldback, repeated_replies, reward_jump, sync (vLLM not sampling from the trained weights; on by default), guard."""


@dataclass(frozen=True)
class AlertConfig:
    collapse_steps: int = 3
    """reward_collapse: the pass rate is 0 for this many steps in a row after it was above 0."""
    kl_max: float = 1.0
    """kl: the mean per-token KL to the reference exceeds this."""
    entropy_floor: float = 0.2
    """entropy_collapse: the entropy falls below this share of its mean over the first steps."""
    length_ratio: float = 2.0
    """length_drift: the mean response length moves this factor above (or below 1/factor of) its mean over the first steps."""
    baseline_steps: int = 3
    """Steps whose mean is the baseline for entropy and length."""
    window: int = 3
    """canary and heldback: the last this many steps' attempts are pooled."""
    canary_gap: float = 0.3
    """canary: the canary env's weak-checker pass rate exceeds its strong-checker pass rate by this much."""
    canary_min: int = 4
    """canary: at least this many canary attempts in the window."""
    heldback_max: float = 0.2
    """heldback: more than this share of re-scored passing attempts fail the stronger check."""
    heldback_min: int = 5
    """heldback: at least this many re-scored attempts in the window."""
    repeats_max: float = 0.5
    """repeated_replies: more than this share of a step's attempts give the same reply as one to another task."""
    family_jump: float = 0.6
    """reward_jump: one family's pass rate rises this much above its earlier mean in one step..."""
    family_jump_p: float = 0.001
    """...and that many passes had less than this chance at the earlier (Laplace-smoothed) rate."""
    rm_audit_min_pairs: int = 8
    """rm_audit: the reward model's agreement with the verifier is judged over at least this many pass/fail pairs."""
    infra_share: float = 0.1
    """infra: more than this share of a step's attempts failed for the infrastructure (the sandbox), not the model, after their retries."""


@dataclass(frozen=True)
class LogConfig:
    progress: str = "auto"
    """auto (a bar on a terminal, one line per step otherwise), bar, lines or off."""
    tensorboard: bool = False
    """Write TensorBoard event files to <run>/tensorboard (needs the tensorboard package: pip install '.[log]')."""
    wandb: str = "off"
    """off, offline (a local run directory under <run>/wandb, no network) or online (needs the wandb package)."""
    report: bool = True
    """Write <run>/report.html (curves, evaluation, rollout viewer, sandbox statistics) when the run ends."""


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
class GuardConfig:
    envs: dict[str, int] = field(default_factory=dict)
    """Env id -> validation tasks: skills RL does not train, watched while it does (e.g. {math/arith-v1: 100, code/synth-v1: 50}); empty turns the guard off."""
    every: int = 10
    """Updates between guard evaluations (and one before the first update, the baseline)."""
    offset: int = 100_000
    """Validation tasks are the env's test split from this index on, skipping any whose prompt is among the first `reported` (a small task space repeats prompts)."""
    reported: int = 1000
    """The first this many test tasks, what evaluations report, never serve the guard."""
    alpha: float = 0.05
    """A drop against the baseline with exact McNemar p below this raises the guard alert (add guard to train.stop_on to stop there)."""
    max_new_tokens: int = 160
    """Tokens per validation reply (greedy)."""


@dataclass(frozen=True)
class SandboxConfig:
    urls: tuple[str, ...] = ()
    """`temper sandbox serve` replicas that run every env's code (e.g. [http://10.0.0.5:8080]); empty: the local fork server."""
    token_file: str | None = None
    """File whose first token authenticates to the replicas (else TEMPERING_SANDBOX_TOKEN)."""
    retries: int = 3
    """More attempts for a one-shot run whose replica failed (another replica where there is one)."""


@dataclass(frozen=True)
class StorageConfig:
    endpoint_url: str = ""
    """S3-compatible endpoint for s3:// run URLs (MinIO, SeaweedFS), e.g. http://127.0.0.1:8333; empty: TEMPERING_S3_ENDPOINT, AWS_ENDPOINT_URL or AWS itself (docs/storage.md)."""
    retry_s: float = 600.0
    """Seconds a failed checkpoint upload is retried (backoff from 1 s, doubling to 30 s) while training goes on; then the run stops with one line naming its local checkpoint. 0: no retry."""


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
    alerts: AlertConfig = field(default_factory=AlertConfig)
    guard: GuardConfig = field(default_factory=GuardConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    log: LogConfig = field(default_factory=LogConfig)
