"""A scripted InferenceClient: canned replies, in order, tokenized as the real client would.

    client = ScriptedClient(tokenizer, ["def f(", "def f():\\n    return 1"], cut={0})
    run_episode(env, task, client, SamplingParams(max_new_tokens=64))
    client.prompts       # the prompt ids of every completion asked for, in order

Each completion takes the next reply: its tokens plus the end-of-turn token (none for the
completions whose index is in `cut`: a reply that ran out of tokens), clipped to
params.max_new_tokens as a real sampler would clip it. It is a TokenClient (the agent loop,
run_episodes without overlap, the RL step's sample) but not a StreamingClient: it has no engine.
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Collection, ContextManager, Sequence

from tempering.types import Completion, Message, SamplingParams


class ScriptedClient:
    def __init__(self, tokenizer, replies: Sequence[str], cut: Collection[int] = frozenset(),
                 repeat_last: bool = False, end_token: str = "<|im_end|>") -> None:
        self.tokenizer, self.replies, self.cut = tokenizer, list(replies), set(cut)
        self.repeat_last = repeat_last
        """Past the last reply: repeat it (a model stuck in a loop) rather than fail."""
        self.end_token = end_token
        self.prompts: list[list[int]] = []

    def generate(self, prompts: Sequence[Sequence[Message]], params: SamplingParams) -> list[Completion]:
        from tempering.rollout.hf import chat_prompt_ids

        return self.generate_ids([chat_prompt_ids(self.tokenizer, p) for p in prompts], params)

    def generate_ids(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams,
                     seeds: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        return [self._complete(p, params) for p in prompt_ids for _ in range(params.n)]

    def evaluating(self) -> ContextManager[None]:
        return nullcontext()

    def _complete(self, prompt_ids: Sequence[int], params: SamplingParams) -> Completion:
        index = len(self.prompts)
        self.prompts.append(list(prompt_ids))
        if index >= len(self.replies) and not (self.repeat_last and self.replies):
            raise AssertionError(f"ScriptedClient: completion {index + 1} asked for, but only "
                                 f"{len(self.replies)} replies scripted")
        text = self.replies[min(index, len(self.replies) - 1)]
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        reason = "length" if index in self.cut else "stop"
        if index not in self.cut:
            ids.append(self.tokenizer.convert_tokens_to_ids(self.end_token))
        if len(ids) > params.max_new_tokens:
            ids, reason = ids[: params.max_new_tokens], "length"
            text = self.tokenizer.decode(ids, skip_special_tokens=True)
        return Completion(text=text, prompt_ids=tuple(prompt_ids), token_ids=tuple(ids),
                          logprobs=tuple(-0.5 for _ in ids), finish_reason=reason)
