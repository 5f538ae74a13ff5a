"""The inference swap point: anything that turns chat prompts into sampled completions.

Three levels, each what some caller needs and no more:

    InferenceClient   generate(prompts, params): chat in, completions out (eval, make_data)
    TokenClient       + tokenizer, generate_ids(prompt_ids, params, seeds), evaluating():
                      token-in/token-out, what the agent loop and the RL step call
    StreamingClient   + engine(params): a continuous-batching engine fed request by request
                      (overlapped episodes, streamed pass@k)

`HFClient` (rollout/hf.py) is all three; `ScriptedClient` (rollout/fake.py) is the first two
and replies with canned texts, for tests.
"""

from __future__ import annotations

from typing import Any, ContextManager, Protocol, Sequence, runtime_checkable

from tempering.types import Completion, Message, SamplingParams


@runtime_checkable
class InferenceClient(Protocol):
    """Batched chat completion with token ids and per-token log-probs.

    `generate` returns len(prompts) * params.n completions, prompt-major: the n samples of
    prompt 0 first, then those of prompt 1, and so on.
    """

    def generate(self, prompts: Sequence[Sequence[Message]], params: SamplingParams) -> list[Completion]: ...


@runtime_checkable
class TokenClient(InferenceClient, Protocol):
    """Prompts already tokenized (with the policy's own chat template), completions as ids."""

    tokenizer: Any
    """The policy's tokenizer: episodes render feedback and count tokens with it."""

    def generate_ids(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams,
                     seeds: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """As `generate`; sample j of prompt i draws from the random stream seeds[i][j]."""

    def evaluating(self) -> ContextManager[None]:
        """The model in eval mode (dropout off) for the duration."""


@runtime_checkable
class StreamingClient(TokenClient, Protocol):
    def engine(self, params: SamplingParams) -> Any:
        """A `tempering.rollout.engine.Engine`: submit(Request), step() -> finished samples, busy."""
