"""A GRPO step whose sandbox is a pool of two replicas gives the episodes the local sandbox
gives for the same seed: the service changes where code runs, not what the model sees."""

from __future__ import annotations

import signal
import threading

import pytest
import torch

from tempering import envs
from tempering.algorithms.advantages import grpo_advantages
from tempering.config import load_config
from tempering.sandbox import client
from tempering.scheduler.store import STORE_FILE, Store
from tempering.trainer import prepare_run, train

from .conftest import TOKEN

SETTINGS = {"env.id": "code/repair-v1", "rollout.max_turns": 2, "rollout.prompts_per_step": 2,
            "rollout.group_size": 3, "rollout.max_new_tokens": 24}


def episodes(run_dir):
    store = Store(run_dir / STORE_FILE)
    try:
        return [(e.task_id, e.sequence, e.mask, e.reward, e.turns, e.stop_reason) for e in store.episodes()]
    finally:
        store.close()


def test_repair_step_through_two_replicas_equals_the_local_sandbox(replicas, tmp_path, monkeypatch):
    for k in ("TEMPERING_SANDBOX_URLS", "TEMPERING_SANDBOX_TOKEN", "TEMPERING_SANDBOX_RETRIES"):
        monkeypatch.setenv(k, "")  # restored after the test: use_config sets them process-wide
        monkeypatch.delenv(k)
    monkeypatch.setattr(client, "_shared", None)
    cfg = load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in SETTINGS.items()])
    local_dir = tmp_path / "local"
    prepare_run(cfg, local_dir)
    train(cfg, local_dir, steps=1, progress=False)
    if client._shared is not None:
        client._shared.close()
    monkeypatch.setattr(client, "_shared", None)

    a, b = replicas(2)
    (tmp_path / "token").write_text(TOKEN + "\n")
    pooled = load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in SETTINGS.items()]
                         + [f"sandbox.urls=[{a.url},{b.url}]", f"sandbox.token_file={tmp_path / 'token'}"])
    pool_dir = tmp_path / "pool"
    prepare_run(pooled, pool_dir)
    train(pooled, pool_dir, steps=1, progress=False)
    pool = client._shared
    try:
        stats = pool.stats()
        assert sum(s["runs"] for s in stats.values()) > 0  # the runs really went to the replicas
        assert all(s["runs"] > 0 for s in stats.values())
    finally:
        pool.close()
        monkeypatch.setattr(client, "_shared", None)

    got, want = episodes(pool_dir), episodes(local_dir)
    assert len(want) == 6 and got == want


class KillsAReplica:
    """code/repair-v1, except that its third env step or verification SIGKILLs a replica first
(mid-step). Counted on the class: rollouts may copy the env."""

    def __init__(self, env, replica):
        self._env, self._replica = env, replica
        self._lock = threading.Lock()

    def _count(self) -> None:
        with self._lock:
            KillsAReplica.steps += 1
            if KillsAReplica.steps == 3:
                self._replica.stop(signal.SIGKILL)

    def step(self, action):
        self._count()
        return self._env.step(action)

    def verify(self, task, response):
        self._count()
        return self._env.verify(task, response)

    def __getattr__(self, name):
        return getattr(self._env, name)

    steps = 0


def test_replica_killed_mid_step_trains_only_on_attempts_really_scored(replicas, tmp_path, monkeypatch):
    for k in ("TEMPERING_SANDBOX_URLS", "TEMPERING_SANDBOX_TOKEN", "TEMPERING_SANDBOX_RETRIES"):
        monkeypatch.setenv(k, "")
        monkeypatch.delenv(k)
    monkeypatch.setattr(client, "_shared", None)
    a, b = replicas(2)
    (tmp_path / "token").write_text(TOKEN + "\n")
    # no retries at either level, so every run the dead replica gets is an infrastructure failure
    cfg = load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in {
        **SETTINGS, "rollout.max_turns": 1, "rollout.group_size": 4, "rollout.infra_retries": 0,
        "sandbox.retries": 0, "algorithm.drop_zero_variance": False}.items()]
        + [f"sandbox.urls=[{a.url},{b.url}]", f"sandbox.token_file={tmp_path / 'token'}"])
    run_dir = tmp_path / "run"
    prepare_run(cfg, run_dir)
    KillsAReplica.steps = 0
    env = KillsAReplica(envs.make_from_config(cfg.env, cfg.rollout.max_turns), a)
    try:
        (m,) = train(cfg, run_dir, steps=1, progress=False, env=env)
    finally:
        if client._shared is not None:
            client._shared.close()
        monkeypatch.setattr(client, "_shared", None)
    assert a.proc.poll() is not None  # the replica really died mid-step
    store = Store(run_dir / STORE_FILE)
    try:
        eps = store.episodes(1)
        adv = dict(((r, s), v) for r, s, v in store.db.execute(
            "SELECT round, slot, advantage FROM advantages WHERE step = 1").fetchall())
    finally:
        store.close()
    lost = [e for e in eps if e.infra_failed]
    assert len(lost) >= 1 and m["infra/failed"] == len(lost)
    assert all((e.round, e.slot) not in adv for e in lost)  # never trained on
    by_task: dict[str, list] = {}
    for e in eps:
        by_task.setdefault((e.round, e.task_id), []).append(e)
    checked = 0
    for group in by_task.values():
        real = [e for e in group if not e.infra_failed]
        if len(real) < 2:
            assert all((e.round, e.slot) not in adv for e in real)
            continue
        want = grpo_advantages(torch.tensor([[e.reward for e in real]]))[0].tolist()
        assert [adv[(e.round, e.slot)] for e in real] == pytest.approx(want, abs=1e-6)
        checked += 1
    assert checked >= 1
