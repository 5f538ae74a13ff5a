"""The agent loop: one multi-turn episode, token-in/token-out.

The conversation is kept as token ids from start to end. Each model turn appends exactly
the tokens it sampled (loss mask 1), so training sees what the policy produced, never a
re-tokenisation of its text. What the environment says next is rendered with the chat
template and appended as the tokens that close the model's turn and open the next one
(loss mask 0).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Sequence

from tempering.errors import TaskError
from tempering.rollout.hf import chat_prompt_ids
from tempering.types import Message, SamplingParams, Task, Trajectory, Turn


@dataclass(frozen=True)
class Budget:
    """Per-episode limits; the first one reached ends the episode as truncated."""

    max_turns: int = 4
    max_new_tokens: int = 4096
    """Generated tokens over the whole episode."""
    max_context: int = 8192
    """Total tokens (prompt, feedback and generations)."""
    wall_s: float | None = None


def _render(tokenizer, messages: Sequence[Message], generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template([m.as_dict() for m in messages], tokenize=False,
                                         add_generation_prompt=generation_prompt)


def feedback_ids(tokenizer, history: Sequence[Message], reply: str, reply_ids: Sequence[int],
                 feedback: Sequence[Message]) -> list[int]:
    """The tokens between the end of the model's reply and the start of its next reply:
    the rest of the template's closing of the assistant turn (whatever the model did not
    generate itself, e.g. the newline after <|im_end|>), the feedback messages, and the
    next generation prompt."""
    opened = _render(tokenizer, history, True)
    with_reply = _render(tokenizer, [*history, Message("assistant", reply)], False)
    following = _render(tokenizer, [*history, Message("assistant", reply), *feedback], True)
    if not (with_reply.startswith(opened + reply) and following.startswith(with_reply)):
        raise TaskError("this chat template is not prefix-stable across turns; multi-turn episodes need one that is")
    closing = with_reply[len(opened) + len(reply):]
    if reply_ids and reply_ids[-1] in set(tokenizer.all_special_ids):
        end = tokenizer.decode(list(reply_ids[-1:]))
        if closing.startswith(end):
            closing = closing[len(end):]  # the model produced the end-of-turn token itself
    return list(tokenizer.encode(closing + following[len(with_reply):], add_special_tokens=False))


def run_episode(env, task: Task, client, params: SamplingParams, budget: Budget = Budget()) -> Trajectory:
    """Play one episode of `env` on `task` with `client` (which needs `generate_ids` and a
    `tokenizer`), within `budget`."""
    if params.n != 1:
        raise TaskError("run_episode plays one episode: use SamplingParams(n=1) and call it once per sample")
    tok = client.tokenizer
    t0 = time.monotonic()
    messages = list(env.reset(task))
    ids = chat_prompt_ids(tok, messages)
    prompt_len = len(ids)
    mask, logprobs = [0] * len(ids), [0.0] * len(ids)
    turns: list[Turn] = []
    generated = 0
    terminated, stop = False, ""
    while True:
        room = min(params.max_new_tokens, budget.max_new_tokens - generated, budget.max_context - len(ids))
        if room <= 0:
            stop = "tokens" if budget.max_new_tokens - generated <= 0 else "context"
            break
        comp = client.generate_ids([ids], SamplingParams(
            temperature=params.temperature, top_p=params.top_p, max_new_tokens=room, stop=params.stop,
            seed=None if params.seed is None else params.seed + len(turns)))[0]
        start = len(ids)
        ids += comp.token_ids
        mask += [1] * len(comp.token_ids)
        logprobs += comp.logprobs
        generated += len(comp.token_ids)
        result = env.step(comp.text)
        messages.append(Message("assistant", comp.text))
        turns.append(Turn(action=comp.text, feedback=tuple(result.messages), reward=result.reward,
                          info=dict(result.info), span=(start, len(ids))))
        if result.terminated or result.truncated:
            terminated = result.terminated
            stop = "terminated" if result.terminated else result.info.get("truncated_by", "env")
            break
        if len(turns) >= budget.max_turns:
            stop = "turns"
            break
        if budget.wall_s is not None and time.monotonic() - t0 > budget.wall_s:
            stop = "wall_time"
            break
        extra = feedback_ids(tok, messages[:-1], comp.text, comp.token_ids, result.messages)
        ids += extra
        mask += [0] * len(extra)
        logprobs += [0.0] * len(extra)
        messages += result.messages
    return Trajectory(
        task_id=task.id, messages=tuple(messages), token_ids=tuple(ids), loss_mask=tuple(mask),
        logprobs=tuple(logprobs), turns=tuple(turns), reward=sum(t.reward for t in turns),
        terminated=terminated, truncated=not terminated, stop_reason=stop, prompt_len=prompt_len,
    )
