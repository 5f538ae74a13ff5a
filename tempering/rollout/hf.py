"""In-process Hugging Face backend.

Why a hand-written decode loop (`tempering.rollout.engine`) rather than `model.generate`:
each prompt is prefilled once and its KV cache is shared by the n samples of its group, a
finished row leaves the batch at once and a waiting prompt takes its place (continuous
batching), and each row samples from its own seeded stream, so results do not depend on
batch size or composition.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Sequence

import torch
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from tempering.rollout.engine import Engine, generate_through, stop_token_ids
from tempering.rollout.prefix import PrefixStore
from tempering.types import Completion, Message, SamplingParams


def chat_prompt_ids(tokenizer: PreTrainedTokenizerBase, messages: Sequence[Message]) -> list[int]:
    """Token ids of a chat prompt ending where the assistant's reply starts.

    The one place the chat template is applied to prompts, so training, sampling and
    evaluation all see the same tokens.
    """
    ids = tokenizer.apply_chat_template(
        [m.as_dict() for m in messages], add_generation_prompt=True, tokenize=True, return_dict=False
    )
    return list(ids)


class HFClient:
    """InferenceClient over an in-process transformers causal LM (continuous batching, see
    `tempering.rollout.engine`)."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, max_batch: int = 64,
                 prefix_bytes: int = 4 << 30):
        """`prefix_bytes`: memory for the KV caches kept between an episode's turns (0: keep none,
        prefill every turn's whole conversation)."""
        self.model = model
        self.tokenizer = tokenizer
        self.max_batch = max_batch
        self.stop_ids = stop_token_ids(model, tokenizer)
        self.prefixes = PrefixStore(prefix_bytes) if prefix_bytes > 0 else None

    def generate(self, prompts: Sequence[Sequence[Message]], params: SamplingParams) -> list[Completion]:
        prompt_ids = [chat_prompt_ids(self.tokenizer, p) for p in prompts]
        return self.generate_ids(prompt_ids, params)

    def generate_ids(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams,
                     seeds: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        """Token-in variant: prompts already tokenized. Sample i of prompt p draws from the
        random stream `seeds[p][i]` (by default derived from params.seed, p and i), whatever
        else shares the batch."""
        seed = params.seed if params.seed is not None else torch.seed() % 2**63
        with self.evaluating():
            return generate_through(self.engine(params), prompt_ids, params, seed, seeds)

    def engine(self, params: SamplingParams) -> Engine:
        """A continuous-batching engine over this client's model, for callers that feed it
        requests as they come (the overlapped episode pipeline)."""
        return Engine(self.model, self.tokenizer, params, self.max_batch, self.stop_ids, self.prefixes)

    @contextmanager
    def reusing_prefixes(self):
        """For the duration, finished replies keep their KV cache for the conversation's next
        turn (multi-turn episodes); forgotten afterwards."""
        if self.prefixes is None:
            yield
            return
        self.prefixes.active = True
        try:
            yield
        finally:
            self.prefixes.active = False
            self.prefixes.clear()

    @contextmanager
    def evaluating(self):
        """The model in eval mode for the duration (dropout off), restored afterwards."""
        was_training = self.model.training
        self.model.eval()
        try:
            yield
        finally:
            self.model.train(was_training)
