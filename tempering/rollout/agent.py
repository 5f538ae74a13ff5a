"""The agent loop: one multi-turn episode, token-in/token-out.

The conversation is kept as token ids from start to end. Each model turn appends exactly
the tokens it sampled (loss mask 1), so training sees what the policy produced, never a
re-tokenisation of its text. What the environment says next is rendered with the chat
template and appended as the tokens that close the model's turn and open the next one
(loss mask 0).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
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


class _Episode:
    def __init__(self, env, task: Task, tok) -> None:
        self.env, self.task = env, task
        self.messages = list(env.reset(task))
        self.ids = chat_prompt_ids(tok, self.messages)
        self.prompt_len = len(self.ids)
        self.mask, self.logprobs = [0] * len(self.ids), [0.0] * len(self.ids)
        self.turns: list[Turn] = []
        self.generated = 0
        self.terminated, self.stop = False, ""

    def room(self, params: SamplingParams, budget: Budget) -> int:
        room = min(params.max_new_tokens, budget.max_new_tokens - self.generated, budget.max_context - len(self.ids))
        if room <= 0:
            self.stop = "tokens" if budget.max_new_tokens - self.generated <= 0 else "context"
        return room

    def trajectory(self) -> Trajectory:
        return Trajectory(
            task_id=self.task.id, messages=tuple(self.messages), token_ids=tuple(self.ids),
            loss_mask=tuple(self.mask), logprobs=tuple(self.logprobs), turns=tuple(self.turns),
            reward=sum(t.reward for t in self.turns), terminated=self.terminated, truncated=not self.terminated,
            stop_reason=self.stop, prompt_len=self.prompt_len,
        )


def _timed_step(env, action: str):
    t = time.perf_counter()
    result = env.step(action)
    return result, time.perf_counter() - t


def run_episodes(make_env, tasks: Sequence[Task], client, params: SamplingParams,
                 budget: Budget = Budget(), env_workers: int = 8) -> list[Trajectory]:
    """Play one episode per task, all at once: every round, the episodes still running
    generate together in one batch, then their envs step concurrently (`env_workers`
    threads; `make_env()` builds one env per episode, so no two threads share one).
    Same result per episode as `run_episode`, many times faster."""
    if params.n != 1:
        raise TaskError("run_episodes plays one episode per task: use SamplingParams(n=1) and repeat tasks for more")
    tok = client.tokenizer
    t0 = time.monotonic()
    episodes = [_Episode(make_env(), task, tok) for task in tasks]
    active = list(episodes)
    round_ = 0
    while active:
        rooms = [e.room(params, budget) for e in active]
        active = [e for e, r in zip(active, rooms) if r > 0]
        rooms = [r for r in rooms if r > 0]
        if not active:
            break
        # One batch per distinct token allowance (usually all the same).
        for room in sorted(set(rooms)):
            group = [e for e, r in zip(active, rooms) if r == room]
            comps = client.generate_ids([e.ids for e in group], SamplingParams(
                temperature=params.temperature, top_p=params.top_p, max_new_tokens=room, stop=params.stop,
                seed=None if params.seed is None else params.seed + round_))
            with ThreadPoolExecutor(max(1, min(env_workers, len(group)))) as pool:
                steps = list(pool.map(_timed_step, [e.env for e in group], [c.text for c in comps]))
            for e, comp, (result, env_s) in zip(group, comps, steps):
                start = len(e.ids)
                e.ids += comp.token_ids
                e.mask += [1] * len(comp.token_ids)
                e.logprobs += comp.logprobs
                e.generated += len(comp.token_ids)
                e.messages.append(Message("assistant", comp.text))
                e.turns.append(Turn(action=comp.text, feedback=tuple(result.messages), reward=result.reward,
                                    info=dict(result.info), span=(start, len(e.ids)), env_s=env_s))
                if result.terminated or result.truncated:
                    e.terminated = result.terminated
                    e.stop = "terminated" if result.terminated else result.info.get("truncated_by", "env")
                elif len(e.turns) >= budget.max_turns:
                    e.stop = "turns"
                elif budget.wall_s is not None and time.monotonic() - t0 > budget.wall_s:
                    e.stop = "wall_time"
                else:
                    extra = feedback_ids(tok, e.messages[:-1], comp.text, comp.token_ids, result.messages)
                    e.ids += extra
                    e.mask += [0] * len(extra)
                    e.logprobs += [0.0] * len(extra)
                    e.messages += result.messages
        active = [e for e in active if not e.stop]
        round_ += 1
    return [e.trajectory() for e in episodes]


def run_episode(env, task: Task, client, params: SamplingParams, budget: Budget = Budget()) -> Trajectory:
    """Play one episode of `env` on `task` with `client` (which needs `generate_ids` and a
    `tokenizer`), within `budget`."""
    return run_episodes(lambda: env, [task], client, params, budget)[0]
