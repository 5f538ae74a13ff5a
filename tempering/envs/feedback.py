"""The multi-turn pattern every professional domain shares: answer, get the tool's verdict
back, try again.

A `FeedbackEnv` is a procedural task set plus a verifier (like `SingleTurnEnv`) with up to
`max_turns` replies per episode:

    reply is a tool call       (`tool()` answers it)   the tool's output is the next user message
    reply is a correct answer                          the episode ends, reward = score
    reply is wrong, turns left                         `feedback()` (the error, what the tool
                                                       measured) is the next user message
    reply is wrong, last turn                          the episode ends, reward = score

Every reply counts as a turn, tool calls included, so `max_turns` equal to the rollout's
`max_turns` means each episode is graded before the rollout could cut it. The reward is the
final reply's score minus `turn_cost` per turn after the first. With `max_turns=1` the env is
single-turn: one answer, scored. A domain supplies generate / verify / reference_response
(as for SingleTurnEnv) and, optionally, `feedback` and `tool`; see docs/domains.md.
"""

from __future__ import annotations

from tempering.envs.base import Generator, SingleTurnEnv, Verifier
from tempering.errors import TaskError
from tempering.envs.context import compress
from tempering.types import Message, Score, StepResult, Task


class FeedbackEnv(SingleTurnEnv):
    def __init__(self, id: str, generate: Generator, verify: Verifier, reference_response,
                 families: tuple[str, ...] = (), max_turns: int = 3, turn_cost: float = 0.0,
                 unseen: Generator | None = None, unseen_families: tuple[str, ...] = ()) -> None:
        if max_turns < 1:
            raise TaskError(f"max_turns must be at least 1, got {max_turns}")
        if turn_cost < 0:
            raise TaskError(f"turn_cost must be >= 0, got {turn_cost}")
        super().__init__(id, generate, verify, reference_response, families, unseen, unseen_families)
        self.max_turns, self.turn_cost = max_turns, turn_cost
        self._turn = 0
        self._history: list[Message] = []

    # -- what a domain may override ------------------------------------------------------
    def feedback(self, task: Task, score: Score) -> str:
        """The next user message after a wrong answer. Default: the verifier's
        `Score.feedback`, else a plain "not correct"."""
        return score.feedback or "That answer is not correct."

    def tool(self, task: Task, action: str) -> str | None:
        """The output of a tool the reply calls, or None when the reply is an answer."""
        return None

    # -- the episode -----------------------------------------------------------------------
    def reset(self, task: Task) -> list[Message]:
        self._turn = 0
        self._history = super().reset(task)
        return list(self._history)

    def context_messages(self, count_tokens, budget: int) -> list[Message]:
        """The conversation so far in at most `budget` tokens (envs.context.compress)."""
        return compress(self._history, count_tokens, budget)

    def step(self, action: str) -> StepResult:
        if self._task is None:
            raise TaskError(f"env {self.id}: call reset(task) before step(action)")
        task = self._task
        self._turn += 1
        last = self._turn >= self.max_turns
        info = {"turn": self._turn}
        if not last:
            output = self.tool(task, action)
            if output is not None:
                return self._reply(action, output, {**info, "tool": True, "passed": False})
        score = self.verify(task, action)
        info.update(passed=score.passed, score=score.value, status=score.status)
        if not score.passed and not last:
            note = f"\n(reply {self._turn + 1} of {self.max_turns})"
            return self._reply(action, self.feedback(task, score) + note, info)
        self._task = None
        reward = max(0.0, score.value - self.turn_cost * (self._turn - 1))
        return StepResult((), reward, True, False, {**info, **{k: v for k, v in score.details.items() if k not in info}})

    def _reply(self, action: str, text: str, info: dict) -> StepResult:
        msg = Message("user", text)
        self._history += [Message("assistant", action), msg]
        return StepResult((msg,), 0.0, False, False, info)
