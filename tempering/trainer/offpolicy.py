"""One step off-policy (rollout.max_staleness 1): the next step's batch is sampled in a
background thread, by a frozen copy of the weights, while this step trains.

Staleness is at most one update: the batch for step s + 1 is drawn by the weights from
before step s's update, and PPO's clipped importance ratio against the sampling log-probs
corrects for it. The thread only samples and scores; the trainer thread alone touches
the policy and the optimiser.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from concurrent.futures import Future
from typing import Callable

from tempering.trainer.collect import Collected


def frozen_copy(policy):
    """The model that samples off-policy: a copy of the policy, in eval mode, without gradients."""
    model = copy.deepcopy(policy).eval()
    model.requires_grad_(False)
    return model


class SampleAhead:
    """Hands out each step's batch and starts sampling the next one.

    `collect(step, version)` samples a step's batch; `sampler` is the task sampler it
    advances (its state before a pending batch is what a checkpoint must save).
    """

    def __init__(self, collect: Callable[[int, int], Collected], policy, rollout_model, sampler):
        self.collect = collect
        self.policy = policy
        self.rollout_model = rollout_model
        self.sampler = sampler
        self._ahead: tuple[int, Future] | None = None
        self._sampler_before: dict | None = None

    @property
    def sampler_state(self) -> dict | None:
        """The task sampler as it was before a batch being sampled ahead advanced it (None if
        nothing is pending), so a resumed run draws, and finds in the store, the same tasks."""
        return self._sampler_before if self._ahead is not None else None

    def take(self, step: int, version: int, final_step: int | None) -> Collected:
        """The batch sampled in the background for `step` (by the weights before the previous
        update); then sampling of step + 1 starts from the current weights, unless `step` is
        the session's last."""
        t = time.perf_counter()
        if self._ahead is None or self._ahead[0] != step:
            self._launch(step, version)
        got = self._ahead[1].result()
        self._ahead = None
        waited = time.perf_counter() - t
        if final_step is None or step < final_step:
            self._launch(step + 1, version)
        return got._replace(timing=got.timing | {"time_wait_rollout": waited})

    def _launch(self, step: int, version: int) -> None:
        """Start collecting `step` in a daemon thread with a frozen copy of the current weights."""
        self.rollout_model.load_state_dict(self.policy.state_dict())
        self._sampler_before = json.loads(json.dumps(self.sampler.state_dict()))
        future: Future = Future()

        def work() -> None:
            try:
                future.set_result(self.collect(step, version))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the trainer thread by result()
                future.set_exception(exc)

        threading.Thread(target=work, daemon=True, name=f"rollout-step-{step}").start()
        self._ahead = (step, future)

    def close(self) -> None:
        """Let a batch being sampled ahead finish: its episodes land in the store, where a
        resumed run finds them."""
        if self._ahead is not None:
            try:
                self._ahead[1].result()
            except Exception:  # noqa: BLE001 - the run is over; its error was not needed
                pass
            self._ahead = None
