"""A test env beside the real ones: cheap to verify, and one a random tiny model scores on
about half the time, so a trainer test sees groups with reward variance."""

from __future__ import annotations

import random

from tempering.envs.base import SingleTurnEnv
from tempering.types import Message, Score, Task


def parity_env() -> SingleTurnEnv:
    """Reward 1 for a reply with an even count of 'e's."""
    def generate(rng: random.Random, family):
        return Task(id="", domain="test", prompt=(Message("user", f"Say something about {rng.randint(0, 10**9)}."),),
                    reference=None)

    def verify(task, response):
        ok = response.count("e") % 2 == 0
        return Score(float(ok), ok)

    return SingleTurnEnv("test/parity-v1", generate, verify, lambda t: "ok")
