"""Test envs beside the real ones: cheap to verify, and ones a random tiny model scores on
about half the time, so a trainer test sees groups with reward variance. The sandboxed one
runs each reply in a sandbox first, so a test can make the sandbox fail (envs/infra.py)."""

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


def sandboxed_parity_env(sandbox) -> SingleTurnEnv:
    """The parity env, each reply first run in `sandbox` (e.g. a sandbox.fake.LosingSandbox): a
    run the sandbox lost is reported the way the code verifier reports one (sandbox_status)."""
    parity = parity_env()

    def verify(task, response):
        run = sandbox.run(response)
        if run.status != "ok":
            return Score(0.0, False, {"status": "failed", "sandbox_status": run.status, "sandbox_detail": run.detail})
        score = parity.verify(task, response)
        return Score(score.value, score.passed, {"status": "passed" if score.passed else "wrong", "sandbox_status": "ok"})

    return SingleTurnEnv("test/sandboxed-parity-v1", parity._generate, verify, parity.reference_response)
