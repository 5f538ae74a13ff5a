"""Records that cross package boundaries. Typed and frozen where possible; no bare dicts.

What one layer reads from another's record is a typed field. The free-form dicts
(`Score.details`, `StepResult.info`, `Turn.info`, `Task.metadata`) stay for what only the
producer and its own package read, and for what is stored as JSON. A producer may set a
typed field or leave the value under the field's name in its dict: a field left None is
filled from the dict, so both ways read the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable


def _lift(record: Any, source: dict[str, Any], names: Iterable[str]) -> None:
    """Fill each of `names` that is None on the frozen `record` from `source`, where it is there."""
    for name in names:
        if getattr(record, name) is None and source.get(name) is not None:
            object.__setattr__(record, name, source[name])


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str  # "system" | "user" | "assistant"
    content: str
    weight: int = 1
    """An assistant message's part in the SFT loss: 0 leaves it out (it stays in the context of
    the replies after it), as in OpenAI's fine-tuning format. A repair demonstration's wrong
    first attempt has 0: the model learns the fix, not the mistake."""

    def as_dict(self) -> dict:
        """The form HF chat templates take (with `weight` only where it is 0)."""
        out: dict = {"role": self.role, "content": self.content}
        if self.weight != 1:
            out["weight"] = self.weight
        return out


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one completion."""

    temperature: float = 1.0
    """0 means greedy."""
    top_p: float = 1.0
    max_new_tokens: int = 128
    stop: tuple[str, ...] = ()
    """Generation ends once the decoded completion contains any of these strings."""
    n: int = 1
    """Completions per prompt (a GRPO group). They share the prompt's KV cache."""
    seed: int | None = None


@dataclass(frozen=True)
class Completion:
    """One sampled completion of one prompt."""

    text: str
    prompt_ids: tuple[int, ...]
    token_ids: tuple[int, ...]
    """Generated tokens only, including the end-of-turn token when one was produced."""
    logprobs: tuple[float, ...]
    """Log-probability of each generated token under the sampling distribution."""
    finish_reason: str  # "stop" (EOS or stop string) | "length"


@dataclass(frozen=True)
class Score:
    """What a verifier says about one response."""

    value: float
    passed: bool
    details: dict[str, Any] = field(default_factory=dict)
    """The verifier's own record: what it extracted, counts, errors."""
    status: str | None = None
    """One word for the outcome (correct, wrong, timeout, no_answer, ...), where the verifier names one."""
    feedback: str | None = None
    """What to tell the model about its answer, for envs that let it try again."""
    format_ok: bool | None = None
    """Whether the reply had the answer format asked for (None: the verifier does not say)."""
    extracted: Any = None
    """The answer the verifier read out of the reply."""
    infra_retries: int = 0
    """Times the verification was run again because its sandbox failed (envs/infra.py)."""

    def __post_init__(self) -> None:
        _lift(self, self.details, ("status", "feedback", "format_ok", "extracted"))


@dataclass(frozen=True)
class Task:
    """One problem: prompt messages plus whatever the verifier needs."""

    id: str
    domain: str
    prompt: tuple[Message, ...]
    reference: Any
    """The gold answer (or tests/spec) the verifier checks against."""
    metadata: dict[str, Any] = field(default_factory=dict)
    family: str | None = None
    """The task's family (problem type), for envs that have several."""

    def __post_init__(self) -> None:
        _lift(self, self.metadata, ("family",))


@dataclass(frozen=True)
class StepResult:
    """What Env.step returns. terminated: the task ended; truncated: a limit cut it."""

    messages: tuple[Message, ...]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)
    """The env's record of the step (its artifacts: code, logs); Turn.info keeps it."""
    passed: bool | None = None
    """Whether the answer so far passes (None: the env does not say)."""
    status: str | None = None
    """The step's outcome in one word; "timeout" counts toward Budget.max_env_timeouts."""
    progress: float | None = None
    """How far the task is done, 0..1, for Budget.patience (None: the step's reward stands for it)."""
    truncated_by: str | None = None
    """Which limit cut the episode when `truncated` (turns, tokens, ...)."""
    infra_retries: int = 0
    """Times the step was run again because its sandbox failed (envs/infra.py)."""

    def __post_init__(self) -> None:
        _lift(self, self.info, ("passed", "status", "progress", "truncated_by"))


EXEC_STATUSES = ("ok", "error", "timeout", "memory", "output_limit", "killed", "sandbox_error")


@dataclass(frozen=True)
class ExecResult:
    """What one sandboxed run did. `status` says why it ended:
    ok (exit 0), error (non-zero exit or failed compile), timeout (wall or CPU time),
    memory (memory limit), output_limit (stdout or stderr passed its cap), killed (a
    signal not sent by the sandbox's limits), sandbox_error (the sandbox itself failed)."""

    status: str
    exit_code: int | None
    """The exit status; minus the signal number when a signal ended the program."""
    stdout: str
    stderr: str
    wall_s: float
    cpu_s: float
    peak_memory_mb: float
    files: dict[str, bytes] = field(default_factory=dict)
    """Files fetched out of the workspace after the run (see `fetch=`)."""
    truncated: bool = False
    """True when stdout or stderr was cut at the output cap."""
    detail: str = ""
    """One line on why the run ended, when status is not ok."""
    timings: dict[str, float] = field(default_factory=dict)
    """With run(trace=True): milliseconds from the call to each phase of the run."""
    stdout_bytes: bytes = field(default=b"", repr=False)
    """stdout exactly as written, for binary output (`stdout` is it decoded as UTF-8)."""
    audit: tuple[dict, ...] = ()
    """What the run tried that the sandbox stops, seen by the fork server: one entry per
    kind (denied_syscall, network, write_outside) and detail ("ptrace", "connect to 1.1.1.1:53",
    "openat /etc/passwd"), with a count."""

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_json(self) -> dict[str, Any]:
        import base64

        return {
            "status": self.status,
            "exit_code": self.exit_code,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "truncated": self.truncated,
            "wall_s": round(self.wall_s, 6),
            "cpu_s": round(self.cpu_s, 6),
            "peak_memory_mb": round(self.peak_memory_mb, 3),
            "files": {k: base64.b64encode(v).decode() for k, v in self.files.items()},
            "detail": self.detail,
            "audit": [dict(a) for a in self.audit],
            **({"stdout_b64": base64.b64encode(self.stdout_bytes).decode()}
               if self.stdout_bytes and self.stdout_bytes != self.stdout.encode() else {}),
        }

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "ExecResult":
        """The result `to_json` wrote (the sandbox service's native API sends it this way)."""
        import base64

        if d.get("status") not in EXEC_STATUSES:
            raise ValueError(f"not a sandbox status: {d.get('status')!r}")
        raw = d.get("stdout_b64")
        stdout = str(d.get("stdout", ""))
        return cls(d["status"], d.get("exit_code"), stdout, str(d.get("stderr", "")), float(d.get("wall_s", 0.0)),
                   float(d.get("cpu_s", 0.0)), float(d.get("peak_memory_mb", 0.0)),
                   files={k: base64.b64decode(v) for k, v in (d.get("files") or {}).items()},
                   truncated=bool(d.get("truncated", False)), detail=str(d.get("detail", "")),
                   stdout_bytes=base64.b64decode(raw) if raw else stdout.encode(),
                   audit=tuple(dict(a) for a in d.get("audit") or ()))


@dataclass(frozen=True)
class Turn:
    """One model action and what the environment answered."""

    action: str
    feedback: tuple[Message, ...]
    reward: float
    info: dict[str, Any] = field(default_factory=dict)
    """The env's record of the turn: its artifacts (e.g. the code version and its
    execution log) live here."""
    span: tuple[int, int] = (0, 0)
    """[start, end) of this turn's generated tokens in Trajectory.token_ids (in the tokens of
    segment `segment` when that is above 0)."""
    env_s: float = 0.0
    """Seconds the env took to answer (sandbox runs and verification)."""
    segment: int = 0
    """Which stretch of the episode the turn belongs to: 0 is the first, k is Trajectory.segments[k - 1]."""
    passed: bool | None = None
    """StepResult.passed of the turn."""
    status: str | None = None
    """StepResult.status of the turn."""
    infra_failed: bool = False
    """The sandbox failed the step on every try (envs/infra.py): its reward means nothing."""
    infra_retries: int = 0
    """Times the step was run again because its sandbox failed."""

    def __post_init__(self) -> None:
        _lift(self, self.info, ("passed", "status"))


@dataclass(frozen=True)
class Segment:
    """A stretch of a long episode that was trained on its own prompt: when the conversation
    outgrew the context budget, the env's compressed context became a fresh prompt and the
    episode went on from there. Same fields as a Trajectory's tokens."""

    prompt_ids: tuple[int, ...]
    token_ids: tuple[int, ...]
    """Every token after `prompt_ids`: replies, feedback and template tokens."""
    loss_mask: tuple[int, ...]
    logprobs: tuple[float, ...]

    def as_dict(self) -> dict:
        return {"prompt_ids": list(self.prompt_ids), "token_ids": list(self.token_ids),
                "loss_mask": list(self.loss_mask), "logprobs": list(self.logprobs)}

    @classmethod
    def from_dict(cls, d: dict) -> "Segment":
        return cls(tuple(d["prompt_ids"]), tuple(d["token_ids"]), tuple(d["loss_mask"]), tuple(d["logprobs"]))


@dataclass(frozen=True)
class Trajectory:
    """A whole episode, token-in/token-out: exactly the ids the policy saw and produced."""

    task_id: str
    messages: tuple[Message, ...]
    token_ids: tuple[int, ...]
    loss_mask: tuple[int, ...]
    """1 on tokens the model generated, 0 on prompt, feedback and chat-template tokens."""
    logprobs: tuple[float, ...]
    """Sampling log-probs of generated tokens (0.0 where loss_mask is 0)."""
    turns: tuple[Turn, ...]
    reward: float
    """The episode's return: the sum of the turns' rewards."""
    terminated: bool
    truncated: bool
    stop_reason: str
    """"terminated" (the env ended it), which budget cut it (turns, tokens, wall_time, context), or
    "infra" (a step's sandbox failed on every try)."""
    prompt_len: int = 0
    """Tokens before the first generated token."""
    wall_s: float = 0.0
    """Seconds from the episode's start to its end."""
    segments: tuple[Segment, ...] = ()
    """Later stretches of the episode, each on a compressed prompt, when the conversation
    outgrew Budget.context_budget. token_ids/loss_mask/logprobs above hold the first."""

    @property
    def infra_failed(self) -> bool:
        """A turn's sandbox failed on every try: the episode is the infrastructure's failure, not the model's."""
        return any(t.infra_failed for t in self.turns)

    @property
    def infra_retries(self) -> int:
        """Env steps run again over the episode because their sandbox failed."""
        return sum(t.infra_retries for t in self.turns)
