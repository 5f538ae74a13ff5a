"""A group of attempts at one prompt, as the RL step trains on it, and the conversions from
what rollouts produce (completions, multi-turn trajectories) to stored episodes.

An attempt whose sandbox failed on every try (envs/infra.py) is not in its group: the group's
statistics, advantages and loss see only the attempts that were really scored, exactly as if
the failed ones had never been sampled. The group counts them (`infra_failed`), and one left
with fewer than 2 real attempts is not trained on, like a group whose rewards are all equal.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tempering.envs.infra import INFRA_STOP, is_infra_failure
from tempering.eval.accuracy import repeats_a_reply
from tempering.scheduler.store import EpisodeRecord
from tempering.types import Completion, Score, Segment, Task, Trajectory


@dataclass
class Group:
    """One prompt and G scored attempts at it.

    `sequences[i]` holds every token after the prompt: a completion, or a whole multi-turn
    episode (replies, feedback and template tokens). `masks[i]` is 1 on the tokens the model
    generated, the only ones that carry loss.
    """

    task: Task | None
    family: str | None
    prompt_ids: tuple[int, ...]
    sequences: list[tuple[int, ...]]
    masks: list[tuple[int, ...]]
    rewards: list[float]
    passed: list[bool]
    turns: list[int] = field(default_factory=list)
    """Turns each attempt took (1 for single-turn)."""
    truncated: list[bool] = field(default_factory=list)
    """Whether each attempt was cut by the token budget rather than ending on its own."""
    env_s: float = 0.0
    """Seconds spent in the env (verification, sandbox runs) for this group."""
    logprobs: list[tuple[float, ...]] = field(default_factory=list)
    """Sampling log-probs per token of each sequence (the behaviour policy)."""
    version: int = 0
    """Optimiser updates the policy had taken when it sampled this group."""
    statuses: list[str | None] = field(default_factory=list)
    """Per attempt, the verifier's word for its (last) answer: correct, wrong, no_answer, ..."""
    segments: list[tuple[Segment, ...]] = field(default_factory=list)
    """Per attempt, the later stretches of a long episode on their compressed prompts
    (rollout.context_budget); each trains with its attempt's advantage."""
    keys: list[tuple[int, int, int]] = field(default_factory=list)
    """Per attempt, its (step, round, slot) in the run's store; empty for groups not stored."""
    infra_failed: int = 0
    """Attempts left out of the group because their sandbox failed on every try."""
    infra_retries: int = 0
    """Verifications or env steps of the group's attempts (left out ones too) run again after a sandbox failure."""
    repeated: list[bool] = field(default_factory=list)
    """Per attempt, whether a reply after feedback repeats an earlier one word for word (the
    feedback went unused); empty for groups not built from stored episodes."""

    def stretches(self) -> list[tuple[int, "Group"]]:
        """(attempt, one-row group) for every later stretch: the same loss on another prompt."""
        return [(j, Group(self.task, self.family, seg.prompt_ids, [seg.token_ids], [seg.loss_mask], [self.rewards[j]],
                          [self.passed[j]], [1], [self.truncated[j] if self.truncated else False], 0.0,
                          [seg.logprobs], self.version))
                for j, segs in enumerate(self.segments) for seg in segs]

    @property
    def lengths(self) -> list[int]:
        """Generated tokens per attempt."""
        return [sum(m) for m in self.masks]

    @property
    def format_ok(self) -> list[bool]:
        """Per attempt: its answer had the form asked for (the domains' statuses for "none found"
        start with no_: no_answer, no_query, no_script)."""
        return [not str(s).startswith("no_") for s in self.statuses] if self.statuses else []

    @property
    def trainable(self) -> bool:
        """Whether an update may train on the group: it has attempts, and at least 2 where
        infrastructure failures took some away (a group baseline needs two real attempts)."""
        return len(self.rewards) >= (2 if self.infra_failed else 1)

    @property
    def informative(self) -> bool:
        return self.trainable and max(self.rewards) - min(self.rewards) > 1e-8

    @classmethod
    def from_completions(cls, task, family, completions: list[Completion], scores: list[Score]) -> "Group":
        return cls(task, family, completions[0].prompt_ids, [c.token_ids for c in completions],
                   [(1,) * len(c.token_ids) for c in completions], [s.value for s in scores],
                   [s.passed for s in scores], [1] * len(completions), [c.finish_reason == "length" for c in completions],
                   statuses=[s.status for s in scores])

    @classmethod
    def from_records(cls, task, family, records: list[EpisodeRecord]) -> "Group":
        """The group of the attempts that were really scored; infra-failed ones are only counted."""
        real = [r for r in records if not r.infra_failed]
        return cls(task, family, records[0].prompt_ids, [r.sequence for r in real], [r.mask for r in real],
                   [r.reward for r in real], [r.passed for r in real], [r.turns for r in real],
                   [r.truncated for r in real], sum(r.env_s for r in records), [r.logprobs for r in real],
                   statuses=[r.turn_records[-1].get("status") if r.turn_records else None for r in real],
                   segments=[r.segments for r in real] if any(r.segments for r in real) else [],
                   keys=[(r.step, r.round, r.slot) for r in real], infra_failed=len(records) - len(real),
                   infra_retries=sum(r.infra_retries for r in records),
                   repeated=[repeats_a_reply([t.get("reply") or "" for t in r.turn_records]) for r in real])


def completion_record(key: tuple[int, int, int], task: Task, family, c: Completion, score: Score,
                      env_s: float) -> EpisodeRecord:
    """A single-turn attempt as a stored episode."""
    truncated = c.finish_reason == "length"
    stop = INFRA_STOP if is_infra_failure(score) else "tokens" if truncated else "terminated"
    step, round_, slot = key
    return EpisodeRecord(step=step, round=round_, slot=slot, task_id=task.id, domain=task.domain, family=family,
                         reward=score.value, passed=score.passed, turns=1, truncated=truncated, stop_reason=stop,
                         infra_retries=score.infra_retries, env_s=env_s, prompt_ids=c.prompt_ids,
                         sequence=c.token_ids, mask=(1,) * len(c.token_ids), logprobs=c.logprobs, turn_records=({
                             "reward": score.value, "status": score.status, "env_s": env_s,
                             "reply": c.text, "info": score.details},))


def trajectory_record(key: tuple[int, int, int], task: Task, family, t: Trajectory) -> EpisodeRecord:
    """A multi-turn episode as a stored episode, with each turn's reply, feedback and record."""
    n = t.prompt_len
    turns = tuple({"reward": u.reward, "status": u.status, "env_s": u.env_s, "reply": u.action,
                   "segment": u.segment,
                   "feedback": "\n\n".join(m.content for m in u.feedback),
                   "info": {k: v for k, v in u.info.items() if k != "code"}} for u in t.turns)
    passed = bool(t.turns and t.turns[-1].passed)
    step, round_, slot = key
    return EpisodeRecord(step=step, round=round_, slot=slot, task_id=task.id, domain=task.domain, family=family,
                         reward=t.reward, passed=passed, turns=len(t.turns),
                         truncated=t.stop_reason in ("tokens", "context"),
                         stop_reason=INFRA_STOP if t.infra_failed else t.stop_reason,
                         env_s=sum(u.env_s for u in t.turns), infra_retries=t.infra_retries,
                         prompt_ids=t.token_ids[:n], sequence=t.token_ids[n:],
                         mask=t.loss_mask[n:], wall_s=t.wall_s, logprobs=t.logprobs[n:], turn_records=turns,
                         segments=t.segments)
