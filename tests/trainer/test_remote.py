"""Runs at an s3:// URL (trainer/remote.py) against a real SeaweedFS server (tests/conftest.py):
a run SIGKILLed mid-upload resumes, in another process on a fresh machine, to the uninterrupted
run's weights and metrics; uploads go on in the background while training does; a dead store is
retried, then ends the run with one line and a local checkpoint; a store back in time gets every
checkpoint."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM

from tempering import storage
from tempering.cli.main import main
from tempering.config import load_config
from tempering.errors import RunDirError
from tempering.models.presets import cache_dir
from tempering.trainer import prepare_run, train
from tempering.trainer.remote import STAGING, mirror_dir, new_remote_run, pull_remote_run


def _cfg(**over):
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in over.items()])


def _weights(path):
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


def _fresh_home(path, monkeypatch):
    """Another machine: an empty TEMPERING_HOME that shares only the built models (not the run)."""
    models = cache_dir() / "models"
    path.mkdir()
    (path / "models").symlink_to(models)
    monkeypatch.setenv("TEMPERING_HOME", str(path))


def _objects(s3) -> list[str]:
    root = s3.prefix[5:]
    return sorted(p[len(root) + 1:] for p in s3.filesystem().find(root))


HARNESS = """
import os, signal, sys
from pathlib import Path
from tempering import storage
from tempering.config import load_config
from tempering.envs.fake import parity_env
from tempering.trainer import prepare_run, train
from tempering.trainer.remote import train_remote

how, run, steps, kill_at = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
upload = storage._upload

def upload_then_die(fs, local, path):  # the process dies once it has uploaded part of step `kill_at`
    upload(fs, local, path)
    if path.endswith(f"/checkpoints/step-{kill_at}/model.safetensors"):
        os.kill(os.getpid(), signal.SIGKILL)

storage._upload = upload_then_die
cfg = load_config("configs/tiny-cpu.yaml", ["algorithm.drop_zero_variance=true", "rollout.min_informative_groups=1"])
if how == "local":
    prepare_run(cfg, Path(run))
    train(cfg, Path(run), steps=steps, progress=False, env=parity_env())
else:
    train_remote(run, None if how == "resume" else cfg, steps=steps, progress=False, env=parity_env())
"""


def _harness(tmp_path, how: str, run, steps: int, kill_at: int = 0) -> subprocess.CompletedProcess:
    """`temper train` in a process of its own (the parity env, tiny-cpu), SIGKILLed where asked."""
    (tmp_path / "harness.py").write_text(HARNESS)
    return subprocess.run([sys.executable, str(tmp_path / "harness.py"), how, str(run), str(steps), str(kill_at)],
                          capture_output=True, text=True, timeout=600)


def _steady(metrics: list[dict]) -> list[dict]:
    """Metric lines without what measures the machine (timings, cost) and without episodes_reused
    (a resume takes the episodes its step's store already holds instead of sampling them again)."""
    return [{k: v for k, v in m.items() if not k.startswith(("time_", "cost/", "tokens_per_s", "episodes_reused"))}
            for m in metrics]


def _jsonl(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines()]


def test_sigkill_mid_upload_then_resume_on_a_fresh_machine_equals_an_uninterrupted_run(s3, tmp_path, monkeypatch):
    """4 steps straight (local) == a run at s3:// SIGKILLed by itself while step 3's checkpoint
    uploads (its weights up, its manifest not), then resumed from an empty TEMPERING_HOME in a
    second process: bitwise-equal weights, equal metrics. Each run is a process of its own."""
    straight = tmp_path / "straight"
    done = _harness(tmp_path, "local", straight, 4)
    assert done.returncode == 0, done.stderr

    _fresh_home(tmp_path / "machine-a", monkeypatch)
    killed = _harness(tmp_path, "new", s3.prefix, 4, kill_at=3)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    objects = _objects(s3)
    assert storage.latest_complete(s3.prefix) == 2 and "checkpoints/step-3.manifest.json" not in objects
    assert "checkpoints/step-3/model.safetensors" in objects  # the cut upload
    remote = _jsonl(storage.read_bytes(storage.join(s3.prefix, "metrics.jsonl")).decode())
    assert [m["step"] for m in remote] == [1, 2, 3]  # step 3's run files, snapshot at its checkpoint, went up first

    _fresh_home(tmp_path / "machine-b", monkeypatch)
    resumed = _harness(tmp_path, "resume", s3.prefix, 4)
    assert resumed.returncode == 0, resumed.stderr
    straight_metrics = _jsonl((straight / "metrics.jsonl").read_text())
    remote = _jsonl(storage.read_bytes(storage.join(s3.prefix, "metrics.jsonl")).decode())
    assert [m["step"] for m in remote] == [1, 2, 3, 4] and _steady(remote) == _steady(straight_metrics)
    assert [m["episodes_reused"] for m in remote] == [0, 0, 2 * 4, 0]  # step 3's, in the store the killed run sent
    assert any(m["groups_trained"] > 0 and m["grad_norm"] > 0 for m in straight_metrics)  # the weights really moved
    wa, wb = _weights(straight / "checkpoints" / "step-4"), _weights(mirror_dir(s3.prefix) / "checkpoints" / "step-4")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    objects = _objects(s3)  # keep_checkpoints=2 remotely; the cut step-3 upload replaced by the real one
    assert {o.split("/")[1].split(".")[0] for o in objects if o.startswith("checkpoints/")} == {"step-3", "step-4"}
    assert {"config.yaml", "metrics.jsonl", "store.sqlite"} <= set(objects)


def test_the_store_killed_mid_run_ends_in_one_line_and_a_local_checkpoint(own_s3, tmp_path, monkeypatch, capsys):
    """The store dies after step 1 is published and stays down: training goes on to step 3 while
    step 2's upload is retried; when storage.retry_s runs out the run stops with one line."""
    _fresh_home(tmp_path / "home", monkeypatch)
    published = []
    real = storage.publish_checkpoint

    def publish_then_kill(ckpt, url, step, keep=0):
        if published:
            own_s3.stop()  # the store dies after step 1 is published
        real(ckpt, url, step, keep)
        published.append(step)

    monkeypatch.setattr(storage, "publish_checkpoint", publish_then_kill)
    code = main(["train", "configs/tiny-cpu.yaml", "--run-dir", own_s3.prefix, "--steps", "3",
                 "--set", "storage.retry_s=1"])
    out = capsys.readouterr()
    err = out.err.strip().splitlines()
    assert code == 2 and published == [1] and "Traceback" not in out.err
    assert [x for x in err if x.startswith("temper: error")] == [err[-1]]  # one line stops the run
    line, local = err[-1], mirror_dir(own_s3.prefix) / "checkpoints" / "step-3"
    assert line.startswith("temper: error: could not publish checkpoint step-2 to s3://runs/run (tried")
    assert "The store's newest checkpoint of this run: step-1;" in line
    assert f"the newest local checkpoint is step-3, in {local};" in line  # trained on past the failed upload
    assert f"temper train --resume {own_s3.prefix}" in line
    assert (local / "model.safetensors").is_file() and "step(s) this session" not in out.out
    assert not (mirror_dir(own_s3.prefix) / STAGING).exists()


def _wait_for(path: Path, limit_s: float = 300) -> bool:
    """True once `path` exists; False after `limit_s` (a guard against a hang, not a measurement)."""
    deadline = time.monotonic() + limit_s
    while not path.exists():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def test_a_store_back_after_an_outage_gets_every_checkpoint_while_training_goes_on(own_s3, tmp_path, monkeypatch,
                                                                                 capsys):
    """The store dies during step 2's upload and stays down until the trainer has saved step 4 (so
    it never waited on the upload, and pruned its own step-2 meanwhile); back on the same ports
    and data, the retry publishes step 2 from its staged copy with the run files of step 2, then 3, 4."""
    _fresh_home(tmp_path / "home", monkeypatch)
    mirror = mirror_dir(own_s3.prefix)
    real, published, outage = storage.publish_checkpoint, [], []

    def outage_during_step_2(ckpt, url, step, keep=0):
        if step == 2 and not outage:
            own_s3.stop()
            try:
                real(ckpt, url, step, keep)
            finally:
                outage.append(_wait_for(mirror / "checkpoints" / "step-4" / "trainer_state.json"))
                outage.append(not (mirror / "checkpoints" / "step-2").exists())  # pruned locally meanwhile
                own_s3.restart()
        real(ckpt, url, step, keep)
        published.append(step)
        metrics = storage.read_bytes(storage.join(url, "metrics.jsonl")).decode().splitlines()
        assert storage.latest_complete(url) == step and [json.loads(x)["step"] for x in metrics] == [*range(1, step + 1)]

    monkeypatch.setattr(storage, "publish_checkpoint", outage_during_step_2)
    assert main(["train", "configs/tiny-cpu.yaml", "--run-dir", own_s3.prefix, "--steps", "4"]) == 0
    out = capsys.readouterr()
    assert outage == [True, True] and published == [1, 2, 3, 4]
    assert "retrying for up to 600 s" in out.err and "checkpoint step-2 published" in out.err
    assert f"run {own_s3.prefix}: 4 step(s) this session, last step 4" in out.out
    objects = _objects(own_s3)  # keep_checkpoints=2 in the store too
    assert {o.split("/")[1].split(".")[0] for o in objects if o.startswith("checkpoints/")} == {"step-3", "step-4"}
    assert not (mirror / STAGING).exists()


def _fake_ckpt(run_dir, step):
    d = run_dir / "checkpoints" / f"step-{step}"
    d.mkdir(parents=True)
    (d / "trainer_state.json").write_text(json.dumps({"step": step}))
    return d


def test_resume_takes_the_newer_of_store_and_mirror(s3, tmp_path, monkeypatch):
    _fresh_home(tmp_path / "home", monkeypatch)
    with pytest.raises(RunDirError, match="nothing to resume"):
        pull_remote_run(s3.prefix)
    run = tmp_path / "run"
    (run).mkdir()
    (run / "config.yaml").write_text("name: x\n")
    storage.sync_run_files(run, s3.prefix)
    storage.publish_checkpoint(_fake_ckpt(run, 2), s3.prefix, 2)
    with pytest.raises(RunDirError, match="already holds a run"):
        new_remote_run(s3.prefix, _cfg())
    mirror = mirror_dir(s3.prefix)
    _fake_ckpt(mirror, 3)  # a checkpoint the dead store never got
    assert pull_remote_run(s3.prefix) == mirror and (mirror / "checkpoints" / "step-3").is_dir()
    assert not (mirror / "config.yaml").exists()  # the mirror was left as it was
    storage.publish_checkpoint(_fake_ckpt(run, 4), s3.prefix, 4)
    assert pull_remote_run(s3.prefix) == mirror
    assert sorted(p.name for p in (mirror / "checkpoints").iterdir()) == ["step-4"]
    assert (mirror / "config.yaml").read_text() == "name: x\n"


def test_train_and_resume_an_s3_run_from_the_command_line(s3, tmp_path, monkeypatch, capsys):
    _fresh_home(tmp_path / "a", monkeypatch)
    assert main(["train", "configs/tiny-cpu.yaml", "--run-dir", s3.prefix, "--steps", "1"]) == 0
    assert main(["train", "configs/tiny-cpu.yaml", "--run-dir", s3.prefix, "--steps", "1"]) == 2  # taken
    _fresh_home(tmp_path / "b", monkeypatch)
    assert main(["train", "--resume", s3.prefix, "--steps", "2"]) == 0
    out = capsys.readouterr()
    assert f"run {s3.prefix}: 1 step(s) this session, last step 2" in out.out
    assert "already holds a run" in out.err
    assert storage.latest_complete(s3.prefix) == 2
    _fresh_home(tmp_path / "c", monkeypatch)  # reading the run from a third machine
    assert main(["runs", "show", s3.prefix, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["steps"] == 2
    assert main(["report", s3.prefix, "--out", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 1000
    assert main(["report", s3.prefix + "-none"]) == 2
    assert "has no store.sqlite" in capsys.readouterr().err


def test_data_path_and_audit_data_take_an_s3_url(s3, tmp_path, capsys):
    """An sft run whose data.path is an s3:// JSONL file reads the same rows as the local file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tempering.envs import make
    from tempering.errors import ConfigError
    from tempering.trainer.data import read_rows
    from tempering.trainer.make_data import sft_rows, write_jsonl

    local = tmp_path / "sft.jsonl"
    write_jsonl(sft_rows(make("math/arith-v1"), "train", 8), local)
    pq.write_table(pa.Table.from_pylist(read_rows(local)), tmp_path / "sft.parquet")
    jsonl, parquet = storage.join(s3.prefix, "sft.jsonl"), storage.join(s3.prefix, "sft.parquet")
    storage.put(local, jsonl)
    storage.put(tmp_path / "sft.parquet", parquet)
    assert read_rows(jsonl) == read_rows(local) == read_rows(parquet)
    with pytest.raises(ConfigError, match="not found"):
        read_rows(jsonl + ".missing")
    sets = {"algorithm.name": "sft", "algorithm.beta": 0, "data.batch_size": 4, "data.max_len": 128}
    with pytest.raises(ConfigError, match="is not a file"):
        prepare_run(_cfg(**sets, **{"data.path": jsonl + ".missing"}), tmp_path / "none")
    cfg = _cfg(**sets, **{"data.path": jsonl})
    prepare_run(cfg, tmp_path / "run")
    assert [m["step"] for m in train(cfg, tmp_path / "run", steps=1, progress=False)] == [1]
    assert main(["audit", "data", jsonl, "--json", "--n", "4"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["rows"] == 8
