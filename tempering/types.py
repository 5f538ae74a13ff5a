"""Records that cross package boundaries. Typed and frozen where possible; no bare dicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Message:
    """One chat message."""

    role: str  # "system" | "user" | "assistant"
    content: str

    def as_dict(self) -> dict[str, str]:
        """The form HF chat templates take."""
        return {"role": self.role, "content": self.content}


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


@dataclass(frozen=True)
class Task:
    """One problem: prompt messages plus whatever the verifier needs."""

    id: str
    domain: str
    prompt: tuple[Message, ...]
    reference: Any
    """The gold answer (or tests/spec) the verifier checks against."""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class StepResult:
    """What Env.step returns. terminated: the task ended; truncated: a limit cut it."""

    messages: tuple[Message, ...]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)
