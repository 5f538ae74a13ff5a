"""`scheduler.backend: ray`: the rollout backend's calls run on Ray actors.

    driver (the trainer)                 RolloutWorker x rollout_workers   SandboxWorker x sandbox_workers
    sample(prompt_ids, params, seeds) -> a contiguous shard each:
                                         generate_ids on its engine (hf or vllm)
    verify(tasks, texts)              -> ------------------------------ a contiguous shard each:
                                                                          env.verify on env_workers threads
    play(tasks, ids, ...)             -> a contiguous shard each:
                                         run_episodes, whose envs are   one env copy per episode
                                         proxies for a SandboxWorker -> (reset/step/close by episode id)
                                         returns {"env_wait_s": mean over the shards}
    sync()                            -> one ray.put of the weights that changed; every worker loads them
                                         (and, with rollout.engine vllm, copies them into its engine and
                                         checks them there: rollout/sync_ok is the worst worker's)

Each rollout worker holds its own copy of the policy: loaded from cfg.model.name, wrapped in
the trainer's own LoRA config when the policy has one (so state-dict keys match), then given
the trainer's weights at construction and after every update. Every sample draws from a
stream fixed by its seed, not by its batch or process (`tempering.rollout.engine`), so this
backend returns what `LocalRollout` returns for the same seeds.

Worker processes import only what they use: a sandbox worker never imports torch.
"""

from __future__ import annotations

import copy
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Callable, Sequence

import ray

from tempering.envs.protocols import CompressesContext
from tempering.errors import ConfigError, TemperingError
from tempering.sandbox import audit
from tempering.types import Completion, Message, SamplingParams, Score, StepResult, Task, Trajectory

if TYPE_CHECKING:  # tempering.rollout imports torch, which a sandbox worker never needs
    from tempering.rollout import Budget

WORKER_ENV = {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
"""Set in every worker: never reach for the Hub; no tokenizer thread pools beside torch's."""


class RayRollout:
    """The RolloutBackend (scheduler.backends) over rollout and sandbox actors (see the module docstring).

    `rollout_cpus` and `sandbox_cpus` are what each actor reserves (Ray sets a worker's
    OMP_NUM_THREADS, and so torch's thread count, from it); `rollout_gpus` > 0 puts each
    policy copy on a GPU.
    """

    def __init__(self, cfg, policy, rollout_cpus: float = 0.5, sandbox_cpus: float = 0.5,
                 rollout_gpus: float = 0.0) -> None:
        s, r = cfg.scheduler, cfg.rollout
        self._started = connect(s.address)
        _check_capacity(s, rollout_cpus, sandbox_cpus, rollout_gpus)
        self.policy = policy
        self.weights = WeightTracker()
        peft = getattr(policy, "peft_config", {}).get("default")
        runtime_env = {"env_vars": WORKER_ENV}
        rollout = ray.remote(RolloutWorker).options(num_cpus=rollout_cpus, num_gpus=rollout_gpus,
                                                    runtime_env=runtime_env)
        sandbox = ray.remote(SandboxWorker).options(num_cpus=sandbox_cpus, max_concurrency=s.env_workers,
                                                    runtime_env=runtime_env)
        device = "cuda" if rollout_gpus > 0 else "cpu"
        from tempering.models import resolve_path
        from tempering.rollout.engines import resolve_engine

        self.engine = resolve_engine(r.engine, resolve_path(cfg.model.name), device)
        """hf or vllm, as every worker samples (resolved here, so a fallback is said once)."""
        engine = {"engine": self.engine, "dtype": r.engine_dtype, "kv_cache_gib": r.engine_kv_gib, "seed": cfg.seed}
        self.rollouts = [rollout.remote(cfg.model.name, cfg.model.dtype, peft, r.prompts_per_step * r.group_size,
                                        s.env_workers, device, engine) for _ in range(s.rollout_workers)]
        self.sandboxes = [sandbox.remote(cfg.env, s.env_workers, r.max_turns, r.infra_retries)
                          for _ in range(s.sandbox_workers)]
        _wait_started(self.rollouts + self.sandboxes)
        self.sync()

    def sample(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams,
               seeds: Sequence[Sequence[int]]) -> list[Completion]:
        refs = [w.sample.remote(list(prompt_ids[a:b]), params, list(seeds[a:b]))
                for w, (a, b) in zip(self.rollouts, shards(len(prompt_ids), len(self.rollouts)))]
        return [c for part in _get(refs) for c in part]

    def verify(self, tasks: Sequence[Task], texts: Sequence[str], tags: Sequence | None = None) -> list[tuple[Score, float]]:
        """Each answer verified in a sandbox worker; the sandbox incidents of its runs come back
        with it and go into this process's audit log under its tag (sandbox/audit.py)."""
        tags = list(tags) if tags is not None else [None] * len(texts)
        refs = [w.verify.remote(list(tasks[a:b]), list(texts[a:b]), tags[a:b])
                for w, (a, b) in zip(self.sandboxes, shards(len(texts), len(self.sandboxes)))]
        out = []
        for tag, (score, seconds, incidents) in zip(tags, (s for part in _get(refs) for s in part)):
            audit.LOG.put(tag, incidents)
            out.append((score, seconds))
        return out

    def play(self, tasks: Sequence[Task], ids: Sequence[int], params: SamplingParams, budget: Budget,
             overlap: bool, on_done: Callable[[int, Trajectory], None]) -> dict:
        """Each rollout worker plays a contiguous shard; a shard's episodes go to `on_done`
        (in the order they ended) as soon as that shard returns. Returns {"env_wait_s": the
        seconds a worker's generation stood waiting on envs, averaged over the shards}."""
        pending = [w.play.remote(self.sandboxes, list(tasks[a:b]), list(ids[a:b]), params, budget, overlap)
                   for w, (a, b) in zip(self.rollouts, shards(len(tasks), len(self.rollouts)))]
        waits = []
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            ended, stats = _get(ready[0])
            waits.append(stats["env_wait_s"])
            for i, trajectory in ended:
                audit.LOG.put(i, stats["incidents"].get(i, []))  # the episode's sandbox incidents
                on_done(i, trajectory)
        return {"env_wait_s": sum(waits) / max(1, len(waits))}

    def sync(self) -> dict:
        """Send the policy's weights to every rollout worker, if any changed since the last
        sync: only the tensors that changed (all after a full update, the adapters under
        LoRA), as one object every worker reads. A worker sampling with vLLM passes them on
        to its engine and checks them there; the metrics are the worst worker's."""
        changed = self.weights.changed(self.policy)
        if not changed:
            return {}
        weights = ray.put(changed)
        reports = [m for m in _get([w.load_weights.remote(weights) for w in self.rollouts]) if m]
        if not reports:
            return {}
        worst = max(reports, key=lambda m: (1 - m["rollout/sync_ok"], m["rollout/probe_diff_max"]))
        return worst | {"rollout/sync_s": max(m["rollout/sync_s"] for m in reports)}

    def close(self) -> None:
        """Stop the actors, and the Ray instance if this object started it."""
        for actor in self.rollouts + self.sandboxes:
            ray.kill(actor)
        self.rollouts, self.sandboxes = [], []
        if self._started:
            ray.shutdown()
            self._started = False


class WeightTracker:
    """Which of a model's tensors changed since the last look.

    A tensor's version counter moves with every in-place write (optimiser steps,
    load_state_dict) and its data pointer when it is replaced; hashing the weights instead
    would cost about as much as sending them.
    """

    def __init__(self) -> None:
        self.marks: dict[str, tuple[int, int]] = {}

    def changed(self, model) -> dict:
        """{name: CPU tensor} of the state-dict entries that changed; everything the first time."""
        state = model.state_dict()
        marks = {k: (t.data_ptr(), t._version) for k, t in state.items()}
        changed = {k: t.detach().cpu() for k, t in state.items() if self.marks.get(k) != marks[k]}
        self.marks = marks
        return changed


class RolloutWorker:
    """A copy of the policy and a client over it (HFClient, or a vLLM engine of its own)."""

    def __init__(self, model: str, dtype: str, peft_config, max_batch: int, env_workers: int,
                 device: str = "cpu", engine: dict | None = None) -> None:
        from tempering.models import load
        from tempering.rollout.engines import make_client

        loaded = load(model, dtype, device=device)
        policy = loaded.model
        if peft_config is not None:  # the trainer's own adapter config: same modules, same keys
            from peft import get_peft_model

            policy = get_peft_model(policy, copy.deepcopy(peft_config))
        e = engine or {"engine": "hf"}
        self.policy = policy
        self.client = make_client(e["engine"], policy, loaded.tokenizer, loaded.path, max_batch=max_batch,
                                  dtype=e.get("dtype"), kv_cache_gib=e.get("kv_cache_gib", 2.0), seed=e.get("seed", 0))
        self.env_workers = env_workers

    def load_weights(self, state: dict) -> dict:
        """Take the trainer's changed tensors; a vLLM engine then takes the whole model and is
        checked (returns its sync metrics; {} for hf, which samples from this copy itself)."""
        unexpected = self.policy.load_state_dict(state, strict=False).unexpected_keys
        if unexpected:
            raise RuntimeError(f"the trainer's weights do not fit this worker's model: {unexpected[:3]}...")
        if not hasattr(self.client, "sync"):
            return {}
        report = self.client.sync(self.policy)
        return report.metrics()

    def sample(self, prompt_ids: list[list[int]], params: SamplingParams, seeds: list) -> list[Completion]:
        return self.client.generate_ids(prompt_ids, params, seeds=seeds)

    def play(self, sandboxes: list, tasks: list[Task], ids: list[int], params: SamplingParams, budget: Budget,
             overlap: bool) -> tuple[list[tuple[int, Trajectory]], dict]:
        """Play one episode per task; each episode's env lives in sandbox `id % len(sandboxes)`.
        Returns ((id, trajectory) in the order the episodes ended, run_episodes' stats)."""
        from tempering.rollout import run_episodes

        order = iter(ids)  # run_episodes builds one env per episode, in the order of `ids`

        def make_env() -> RemoteEnv:
            key = next(order)
            return RemoteEnv(sandboxes[key % len(sandboxes)], key)

        ended: list[tuple[int, Trajectory]] = []
        stats: dict = {}
        try:
            run_episodes(make_env, tasks, self.client, params, budget, env_workers=self.env_workers, overlap=overlap,
                         on_done=lambda i, t: ended.append((i, t)), ids=ids, stats=stats)
        finally:  # closing an episode hands back the incidents its sandbox runs left
            left = ray.get([sandboxes[key % len(sandboxes)].close.remote(key) for key in ids])
        stats["incidents"] = {key: found for key, found in zip(ids, left) if found}
        return ended, stats


class RemoteEnv:
    """What run_episodes sees in a rollout worker: an env whose episode lives in a sandbox
    worker (a StepRunner actor), under the episode's id."""

    def __init__(self, sandbox, key: int) -> None:
        self.sandbox, self.key = sandbox, key

    def reset(self, task: Task) -> list[Message]:
        messages, compresses = _get(self.sandbox.reset.remote(self.key, task))
        if compresses:  # the agent compresses long episodes only where the env can (rollout.context_budget)
            self.context_messages = self._context_messages
        return messages

    def _context_messages(self, count_tokens, budget: int) -> list[Message]:
        return _get(self.sandbox.context_messages.remote(self.key, count_tokens, budget))

    def step(self, action: str) -> StepResult:
        # An env's own exception comes back as itself, so a failed turn records the same
        # error as it would locally.
        return _get(self.sandbox.step.remote(self.key, action), unwrap=Exception)


class SandboxWorker:
    """A StepRunner (scheduler.backends) on a Ray actor: the training env (cfg.env: one env or a mix). Verifies answers on `env_workers`
    threads and keeps one copy of the env per running episode; runs up to env_workers
    calls at once (the actor's max_concurrency)."""

    def __init__(self, env_cfg, env_workers: int, max_turns: int = 1, infra_retries: int = 0) -> None:
        from tempering import envs
        from tempering.envs.infra import InfraRetry

        # verifications and steps whose sandbox failed are re-run here, beside the sandbox
        self.env = InfraRetry(envs.make_from_config(env_cfg, max_turns), infra_retries)
        self.env_workers = env_workers
        self.episodes: dict[int, object] = {}

    def verify(self, tasks: list[Task], texts: list[str], tags: list | None = None) -> list[tuple[Score, float, list]]:
        """(score, seconds, the sandbox incidents of its runs) per answer."""
        tags = tags if tags is not None else [None] * len(texts)
        with ThreadPoolExecutor(max(1, min(self.env_workers, len(texts)))) as pool:
            return list(pool.map(self._timed_verify, tasks, texts, tags))

    def _timed_verify(self, task: Task, text: str, tag=None) -> tuple[Score, float, list]:
        mine = None if tag is None else ("verify", tag, threading.get_ident())  # this call's own tag here
        t = time.perf_counter()
        with audit.tagged(mine):
            score = self.env.verify(task, text)
        return score, time.perf_counter() - t, audit.LOG.take(mine) if mine is not None else []

    def reset(self, key: int, task: Task) -> tuple[list[Message], bool]:
        """The episode's first messages, and whether its env can compress the conversation."""
        env = self.episodes[key] = copy.copy(self.env)
        with audit.tagged(("episode", key)):
            return env.reset(task), isinstance(env, CompressesContext)

    def context_messages(self, key: int, count_tokens, budget: int) -> list[Message]:
        return self.episodes[key].context_messages(count_tokens, budget)

    def step(self, key: int, action: str) -> StepResult:
        with audit.tagged(("episode", key)):
            return self.episodes[key].step(action)

    def close(self, key: int) -> list:
        """Forget episode `key`; returns the sandbox incidents its runs left."""
        self.episodes.pop(key, None)
        return audit.LOG.take(("episode", key))


def shards(n: int, k: int) -> list[tuple[int, int]]:
    """[start, end) of at most k contiguous, non-empty, near-equal parts of range(n)."""
    k = max(1, min(k, n))
    bounds = [n * i // k for i in range(k + 1)]
    return [(a, b) for a, b in zip(bounds, bounds[1:]) if b > a]


def _get(refs, unwrap: type[BaseException] = TemperingError):
    """ray.get, re-raising a worker's `unwrap` exceptions as themselves rather than wrapped
    in a RayTaskError (so a TemperingError still reaches the CLI as one line)."""
    try:
        return ray.get(refs)
    except ray.exceptions.RayTaskError as e:
        if isinstance(e.cause, unwrap):
            raise e.cause from None
        raise


def _check_capacity(s, rollout_cpus: float, sandbox_cpus: float, rollout_gpus: float) -> None:
    """Refuse at once what the cluster can never hold (Ray would leave the actors pending
    forever)."""
    have = ray.cluster_resources()
    cpus = s.rollout_workers * rollout_cpus + s.sandbox_workers * sandbox_cpus
    gpus = s.rollout_workers * rollout_gpus
    if cpus > have.get("CPU", 0) or gpus > have.get("GPU", 0):
        raise ConfigError(f"scheduler.rollout_workers={s.rollout_workers} and scheduler.sandbox_workers="
                          f"{s.sandbox_workers} need {cpus:g} CPUs and {gpus:g} GPUs, but the Ray cluster has "
                          f"{have.get('CPU', 0):g} and {have.get('GPU', 0):g}: use fewer workers or add nodes")


def _wait_started(actors: list) -> None:
    """Wait until every actor has run its __init__; one that failed (no such model on its
    node, tempering not installed there) is one line naming its error."""
    try:
        ray.get([a.__ray_ready__.remote() for a in actors])
    except ray.exceptions.RayActorError as e:
        last = (str(e).strip().splitlines() or ["unknown error"])[-1]
        raise ConfigError(f"a Ray worker did not start: {last} (every node needs tempering installed and the "
                          "model that model.name names)") from None


def connect(address: str | None) -> bool:
    """Join the Ray cluster at `address`, or start a local instance when it is None, unless
    Ray is already initialised. Returns whether this call started Ray."""
    if ray.is_initialized():
        return False
    if address is not None:
        _check_address(address)
    try:
        ray.init(address=address, include_dashboard=False, ignore_reinit_error=True)
    except Exception as e:  # noqa: BLE001 - every way Ray can fail to start or connect is a config problem
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        where = f"scheduler.address {address!r}" if address else "scheduler.address unset (a local Ray instance)"
        raise ConfigError(f"{where}: Ray did not start ({first}); run `ray start --head` on the head node and set "
                          "scheduler.address to auto (on a cluster node) or ray://<head>:10001, "
                          "or unset it for a local instance") from e
    return True


def _check_address(address: str) -> None:
    """Fail in seconds, not minutes, when nothing listens at a host:port address (Ray
    itself retries an unreachable head for minutes)."""
    if address == "auto":
        return
    if address.startswith("ray://"):
        try:
            import grpc  # noqa: F401  (what ray[client] adds)
        except ImportError:
            raise ConfigError(f"scheduler.address {address!r} uses the Ray Client, which needs `pip install "
                              "'ray[client]'`; or run the trainer on a cluster node with scheduler.address: auto") from None
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        socket.create_connection((host or "127.0.0.1", int(port)), timeout=5).close()
    except (OSError, ValueError) as e:
        raise ConfigError(f"scheduler.address {address!r}: no Ray head answers there ({e}); run `ray start --head` "
                          "on the head node and use its host:port (host:6379, or ray://host:10001 for the Ray "
                          "Client), or unset scheduler.address for a local instance") from None
