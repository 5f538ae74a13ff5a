"""A GRPO step whose sandbox is a pool of two replicas gives the episodes the local sandbox
gives for the same seed: the service changes where code runs, not what the model sees."""

from __future__ import annotations

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
