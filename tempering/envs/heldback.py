"""Held-back verification (env.heldback): a share of passing single-turn answers is scored again
by the env's stronger check (`strong_verify`: code/synth-v1 runs 30 new inputs), and the
verdict is kept in the score's details["heldback"], never in the reward. Answers the reward
passed and the stronger check fails are the ones a policy learned to game the reward with;
their share is hack/heldback_disagree (safety/monitors.py). Which answers are re-scored is a
hash of (task, answer), so a resumed run picks the same ones."""

from __future__ import annotations

import dataclasses
import hashlib

from tempering.types import Score, Task


def _sampled(task: Task, response: str, share: float) -> bool:
    digest = hashlib.blake2b(f"{task.id}\n{response}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") / 2**64 < share


class HeldBack:
    """An env whose verify re-scores a sampled share of passing answers with the stronger check."""

    def __init__(self, env, share: float) -> None:
        self.env, self.share = env, share

    def __getattr__(self, name):
        return getattr(self.env, name)

    def _strong(self, task: Task):
        owner = self.env.owner(task) if hasattr(self.env, "owner") else self.env
        return getattr(owner, "strong_verify", None)

    def verify(self, task: Task, response: str) -> Score:
        score = self.env.verify(task, response)
        strong = self._strong(task)
        if not score.passed or strong is None or not _sampled(task, response, self.share):
            return score
        again = strong(task, response)
        details = {**(score.details or {}), "heldback": {"strong_passed": again.passed, "strong": again.value}}
        return dataclasses.replace(score, details=details)
