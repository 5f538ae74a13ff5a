"""Where rollouts run. The RL step asks a backend for three things and never cares where
they happen:

    sample(prompt_ids, params, seeds)  completions, n per prompt, sample j of prompt i from
                                       the random stream seeds[i][j]
    verify(tasks, texts)               (Score, seconds) per answer
    play(tasks, ids, ...)              one multi-turn episode per task, stream fixed by its id;
                                       returns {"env_wait_s": ...} (0 where unknown)
    sync()                             the policy's weights changed: refresh any copies

`RolloutBackend` is that swap point as a protocol. `LocalRollout` runs everything in this
process, on the policy's own weights. `RayRollout` (`tempering.scheduler.ray_backend`) runs
the same calls on rollout actors, whose episodes step their envs through a `StepRunner`
(a sandbox actor holding the env copies). Both run every verification and env step through
`envs.infra.InfraRetry`, so one whose sandbox failed is re-run (rollout.infra_retries).
Because every sample draws from a stream fixed by its seed, not by its batch, both give
the same trajectories for the same seeds.
"""

from __future__ import annotations

import copy
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Protocol, Sequence

from tempering.envs import TaskSet
from tempering.envs.infra import InfraRetry
from tempering.rollout import Budget, run_episodes
from tempering.models import resolve_path
from tempering.rollout.base import TokenClient
from tempering.rollout.engines import make_client
from tempering.sandbox import audit
from tempering.types import Completion, Message, SamplingParams, Score, StepResult, Task, Trajectory


class RolloutBackend(Protocol):
    """What the RL step asks of wherever rollouts run (see the module docstring)."""

    def sample(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams,
               seeds: Sequence[Sequence[int]]) -> list[Completion]: ...

    def verify(self, tasks: Sequence[Task], texts: Sequence[str], tags: Sequence | None = None) -> list[tuple[Score, float]]: ...

    def play(self, tasks: Sequence[Task], ids: Sequence[int], params: SamplingParams, budget: Budget, overlap: bool,
             on_done: Callable[[int, Trajectory], None]) -> dict:
        """One episode per task; each goes to `on_done(id, trajectory)` as it ends. Returns
        {"env_wait_s": seconds generation waited on envs}."""

    def sync(self) -> dict:
        """The policy's weights changed: refresh any copies; returns metrics of the sync
        (rollout/sync_ok and the probe's differences where an engine holds a copy)."""

    def close(self) -> None: ...


class StepRunner(Protocol):
    """Where episodes' envs live when generation runs elsewhere (`ray_backend.SandboxWorker`):
    one env copy per running episode, named by its key."""

    def verify(self, tasks: list[Task], texts: list[str]) -> list[tuple[Score, float]]: ...

    def reset(self, key: int, task: Task) -> tuple[list[Message], bool]:
        """The episode's first messages, and whether its env can compress the conversation."""

    def context_messages(self, key: int, count_tokens: Callable[[str], int], budget: int) -> list[Message]: ...

    def step(self, key: int, action: str) -> StepResult: ...

    def close(self, key: int) -> None: ...


class Tagged:
    """One episode's env whose reset, step and verify run under its id's audit tag, in
    whichever thread calls them (sandbox/audit.py)."""

    def __init__(self, env, tag) -> None:
        self.env, self.tag = env, tag

    def __getattr__(self, name):
        return getattr(self.env, name)

    def reset(self, task):
        with audit.tagged(self.tag):
            return self.env.reset(task)

    def step(self, action):
        with audit.tagged(self.tag):
            return self.env.step(action)

    def verify(self, task, response):
        with audit.tagged(self.tag):
            return self.env.verify(task, response)


class LocalRollout:
    """A RolloutBackend in this process. `policy` is the trainer's model, given where the
    client samples from a copy of its weights (vllm) that `sync` must refresh."""

    def __init__(self, client: TokenClient, env: TaskSet, env_workers: int = 8, policy=None) -> None:
        self.client, self.env, self.env_workers, self.policy = client, env, env_workers, policy
        self.engine = "hf" if policy is None else "vllm"
        """Which engine samples: the trainer corrects for one that is not its own weights (TIS)."""

    def sample(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams,
               seeds: Sequence[Sequence[int]]) -> list[Completion]:
        return self.client.generate_ids(prompt_ids, params, seeds=seeds)

    def verify(self, tasks: Sequence[Task], texts: Sequence[str], tags: Sequence | None = None) -> list[tuple[Score, float]]:
        """Each answer verified in a worker thread; `tags` name the attempts for the sandbox's audit log."""
        tags = list(tags) if tags is not None else [None] * len(texts)

        def one(task, text, tag):
            with audit.tagged(tag):
                return timed_verify(self.env, task, text)

        with ThreadPoolExecutor(max(1, min(self.env_workers, len(texts)))) as pool:
            return list(pool.map(one, tasks, texts, tags))

    def play(self, tasks: Sequence[Task], ids: Sequence[int], params: SamplingParams, budget: Budget, overlap: bool,
             on_done: Callable[[int, Trajectory], None]) -> dict:
        """Returns {"env_wait_s": seconds generation waited on envs}."""
        stats: dict = {}
        order = iter(ids)  # run_episodes makes one env per episode, in the order of `ids`
        run_episodes(lambda: Tagged(copy.copy(self.env), next(order)), tasks, self.client, params, budget,
                     env_workers=self.env_workers, overlap=overlap, on_done=on_done, ids=ids, stats=stats)
        return stats

    def sync(self) -> dict:
        """The engine's copy takes the policy's new weights, and the check says it did
        (rollout/sync_ok); nothing to do where the client samples from the policy itself."""
        if self.policy is None or not hasattr(self.client, "sync"):
            return {}
        report = self.client.sync(self.policy)
        if not report.ok:  # once more, in case the copy was cut short; a second miss is the alert
            report = self.client.sync(self.policy)
        return report.metrics()

    def close(self) -> None:
        if hasattr(self.client, "close"):
            self.client.close()


def timed_verify(env, task: Task, text: str) -> tuple[Score, float]:
    t = time.perf_counter()
    score = env.verify(task, text)
    return score, time.perf_counter() - t


def make_rollout(cfg, env, policy, tokenizer) -> RolloutBackend:
    """The backend cfg.scheduler.backend names."""
    r = cfg.rollout
    if cfg.scheduler.backend == "ray":
        from tempering.scheduler.ray_backend import RayRollout

        s = cfg.scheduler
        return RayRollout(cfg, policy, rollout_cpus=s.rollout_cpus, sandbox_cpus=s.sandbox_cpus,
                          rollout_gpus=s.rollout_gpus)
    client = make_client(r.engine, policy, tokenizer, resolve_path(cfg.model.name), max_batch=r.prompts_per_step * r.group_size,
                         dtype=r.engine_dtype, kv_cache_gib=r.engine_kv_gib, seed=cfg.seed)
    # every verification and env step re-run while its sandbox fails (envs/infra.py)
    return LocalRollout(client, InfraRetry(env, r.infra_retries), cfg.scheduler.env_workers,
                        policy=policy if hasattr(client, "sync") else None)
