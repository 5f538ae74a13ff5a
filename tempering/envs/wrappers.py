"""Env wrappers that end an episode as truncated when it runs past a limit."""

from __future__ import annotations

from dataclasses import replace

from tempering.errors import TaskError
from tempering.types import Message, StepResult, Task


class _Wrapper:
    def __init__(self, env) -> None:
        self.env = env

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, task: Task) -> list[Message]:
        return self.env.reset(task)


class TurnLimit(_Wrapper):
    """At most `max_turns` steps; the step that reaches the limit without ending the
    episode ends it as truncated (truncated_by="turns")."""

    def __init__(self, env, max_turns: int) -> None:
        if max_turns < 1:
            raise TaskError(f"TurnLimit needs max_turns >= 1, got {max_turns}")
        super().__init__(env)
        self.max_turns, self.turns = max_turns, 0

    def reset(self, task: Task) -> list[Message]:
        self.turns = 0
        return super().reset(task)

    def step(self, action: str) -> StepResult:
        self.turns += 1
        result = self.env.step(action)
        if not (result.terminated or result.truncated) and self.turns >= self.max_turns:
            return replace(result, truncated=True, info={**result.info, "truncated_by": "turns"})
        return result


class TokenLimit(_Wrapper):
    """At most `max_tokens` tokens of actions (counted with `tokenizer`) over the episode."""

    def __init__(self, env, tokenizer, max_tokens: int) -> None:
        if max_tokens < 1:
            raise TaskError(f"TokenLimit needs max_tokens >= 1, got {max_tokens}")
        super().__init__(env)
        self.tokenizer, self.max_tokens, self.used = tokenizer, max_tokens, 0

    def reset(self, task: Task) -> list[Message]:
        self.used = 0
        return super().reset(task)

    def step(self, action: str) -> StepResult:
        self.used += len(self.tokenizer.encode(action, add_special_tokens=False))
        result = self.env.step(action)
        if not (result.terminated or result.truncated) and self.used >= self.max_tokens:
            return replace(result, truncated=True, info={**result.info, "truncated_by": "tokens"})
        return result
