"""The inference swap point: anything that turns chat prompts into sampled completions."""

from __future__ import annotations

from typing import Protocol, Sequence

from tempering.types import Completion, Message, SamplingParams


class InferenceClient(Protocol):
    """Batched chat completion with token ids and per-token log-probs.

    `generate` returns len(prompts) * params.n completions, prompt-major: the n samples of
    prompt 0 first, then those of prompt 1, and so on.
    """

    def generate(self, prompts: Sequence[Sequence[Message]], params: SamplingParams) -> list[Completion]: ...
