"""The SQLite state store: one write per episode, resume without loss or duplicates."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

from tempering.cli.main import main
from tempering.config import load_config
from tempering.scheduler.store import STORE_FILE, EpisodeRecord, Store, list_runs
from tempering.trainer import prepare_run, train


def _record(step, slot, passed, task="math/t/1", stop="terminated"):
    return EpisodeRecord(step=step, round=0, slot=slot, task_id=task, domain="math", family="add",
                         reward=float(passed), passed=passed, turns=2, truncated=False, stop_reason=stop, env_s=0.1,
                         prompt_ids=(1, 2, 3), sequence=(4, 5, 6, 7), mask=(1, 1, 0, 1), wall_s=0.5 + slot,
                         turn_records=({"reward": 0.0, "status": "failed", "env_s": 0.05, "reply": "v1",
                                        "feedback": "AssertionError", "info": {"log": "x"}},
                                       {"reward": float(passed), "status": "passed", "env_s": 0.05, "reply": "v2"}))


def test_an_episode_is_stored_once_with_its_turns_and_artifacts(tmp_path):
    store = Store(tmp_path / STORE_FILE)
    assert store.add_episode(_record(1, 0, True))
    assert not store.add_episode(_record(1, 0, False))  # same key: ignored, nothing overwritten
    store.add_episode(_record(1, 1, False))
    back = store.episodes(step=1)
    assert [(e.slot, e.passed, e.sequence, e.mask) for e in back] == [(0, True, (4, 5, 6, 7), (1, 1, 0, 1)),
                                                                      (1, False, (4, 5, 6, 7), (1, 1, 0, 1))]
    assert store.artifacts(1, 0, 0) == [(0, "feedback", "AssertionError"), (0, "info", '{"log": "x"}'),
                                        (0, "reply", "v1"), (1, "reply", "v2")]
    assert store.task_rates() == {"math/t/1": (2, 1)}  # the ignored duplicate did not count
    s = store.summary()
    assert (s["episodes"], s["passed"], s["mixed_tasks"]) == (2, 1, 1)
    assert [e["slot"] for e in s["slowest"]] == [1, 0]
    # WAL: a second connection reads while the first holds a write transaction open
    store.db.execute("BEGIN IMMEDIATE")
    store.db.execute("INSERT INTO metrics VALUES (9, '{}')")
    reader = sqlite3.connect(tmp_path / STORE_FILE)
    assert reader.execute("SELECT COUNT(*) FROM episodes").fetchone() == (2,)
    store.db.execute("COMMIT")
    assert store.db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def _kill_when(run_dir, args, ready, timeout=300):
    """Start `temper train ...`; kill -9 it once `ready(store)` holds."""
    proc = subprocess.Popen([sys.executable, "-m", "tempering.cli.main", "train", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + timeout
    try:
        while True:
            if (run_dir / STORE_FILE).is_file():
                db = sqlite3.connect(run_dir / STORE_FILE, timeout=30)
                try:
                    if ready(db):
                        break
                except sqlite3.OperationalError:  # created but its tables not yet
                    pass
                finally:
                    db.close()
            assert proc.poll() is None, f"train exited early: {proc.stderr.read()[-2000:]}"
            assert time.monotonic() < deadline, "the run never got there"
            time.sleep(0.01)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_kill_9_mid_step_then_resume_keeps_every_finished_episode_once(tmp_path):
    """Killed while step 3 is being scored (after the step-2 checkpoint): the resumed run
    reads step 3's stored episodes back instead of sampling them, and ends with exactly
    the episodes of an uninterrupted run."""
    sets = ["algorithm.beta=0", "rollout.prompts_per_step=3"]
    cfg = load_config("configs/tiny-cpu.yaml", sets)
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    prepare_run(cfg, straight)
    train(cfg, straight, steps=4, progress=False)
    _kill_when(killed, ["configs/tiny-cpu.yaml", "--run-dir", str(killed), "--steps", "4",
                        *[x for s in sets for x in ("--set", s)]],
               lambda db: db.execute("SELECT COUNT(*) FROM episodes WHERE step = 3").fetchone()[0] >= 1)
    before = Store(killed / STORE_FILE)
    kept = {(e.step, e.slot): e.sequence for e in before.episodes()}
    before.close()
    assert any(step == 3 for step, _ in kept)
    assert main(["train", "--resume", str(killed), "--steps", "4"]) == 0
    a, b = Store(straight / STORE_FILE), Store(killed / STORE_FILE)
    ea, eb = a.episodes(), b.episodes()
    assert [(e.step, e.round, e.slot) for e in ea] == [(e.step, e.round, e.slot) for e in eb]  # none lost, none twice
    assert [(e.sequence, e.reward) for e in ea] == [(e.sequence, e.reward) for e in eb]
    assert all(e.sequence == kept[(e.step, e.slot)] for e in eb if (e.step, e.slot) in kept)
    step3 = [json.loads(x) for x in (killed / "metrics.jsonl").read_text().splitlines()][2]
    assert step3["step"] == 3 and step3["episodes_reused"] == sum(1 for s, _ in kept if s == 3)


def test_runs_list_and_show(tmp_path, capsys):
    run = tmp_path / "r1"
    store = Store(run / STORE_FILE)
    store.register_run("r1", "grpo", "math/arith-v1", "tiny-random", {})
    for slot in range(3):
        store.add_episode(_record(1, slot, slot == 0, stop=("terminated", "no_progress", "env_timeout")[slot]))
    store.add_metrics(1, {"step": 1, "reward_mean": 0.25})
    store.close()
    assert list_runs(tmp_path)[0]["episodes"] == 3
    assert main(["runs", "list", "--root", str(tmp_path)]) == 0
    assert "episodes      3" in capsys.readouterr().out
    assert main(["runs", "show", str(run)]) == 0
    out = capsys.readouterr().out
    assert "math             0.333" in out and "no_progress 1" in out and "env_timeout 1" in out
    assert "step 1 round 0 slot 2: 2.5 s wall" in out
    assert main(["runs", "show", str(tmp_path / "nope")]) == 2
