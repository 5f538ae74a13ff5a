"""Runs at an s3:// URL (trainer/remote.py) against a real SeaweedFS server (tests/conftest.py):
a run cut mid-upload resumes on a fresh machine to the uninterrupted run's weights and metrics;
a dead store ends the run with one line and a local checkpoint."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from tempering import storage
from tempering.cli.main import main
from tempering.config import load_config
from tempering.errors import RunDirError
from tempering.models.presets import cache_dir
from tempering.trainer import prepare_run, train
from tempering.trainer.remote import mirror_dir, new_remote_run, pull_remote_run, train_remote


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


def test_cut_upload_then_resume_on_a_fresh_machine_equals_an_uninterrupted_run(s3, tmp_path, monkeypatch, parity_env):
    """4 steps straight (local) == 2 steps at s3://, a SIGKILL mid-upload of step 3 (its files
    without a manifest), then a resume from an empty TEMPERING_HOME: bitwise-equal weights, equal metrics."""
    tiny_home = cache_dir()
    cfg = _cfg(**{"algorithm.drop_zero_variance": "true", "rollout.min_informative_groups": 1})
    straight = tmp_path / "straight"
    prepare_run(cfg, straight)
    a = train(cfg, straight, steps=4, progress=False, env=parity_env)

    _fresh_home(tmp_path / "machine-a", monkeypatch)
    train_remote(s3.prefix, cfg, steps=2, progress=False, env=parity_env)
    step2 = mirror_dir(s3.prefix) / "checkpoints" / "step-2"
    fs, root = s3.filesystem(), s3.prefix[5:]
    fs.put_file(str(step2 / "model.safetensors"), f"{root}/checkpoints/step-3/model.safetensors")  # the cut upload
    assert storage.latest_complete(s3.prefix) == 2

    _fresh_home(tmp_path / "machine-b", monkeypatch)
    assert not mirror_dir(s3.prefix).exists() and cache_dir() != tiny_home
    b = train_remote(s3.prefix, None, steps=4, progress=False, env=parity_env)
    assert [m["step"] for m in b] == [3, 4]
    assert [m["reward_mean"] for m in a[2:]] == [m["reward_mean"] for m in b]
    assert any(m["groups_trained"] > 0 and m["grad_norm"] > 0 for m in a)  # the weights really moved
    wa, wb = _weights(straight / "checkpoints" / "step-4"), _weights(mirror_dir(s3.prefix) / "checkpoints" / "step-4")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)

    objects = _objects(s3)  # keep_checkpoints=2 remotely; the cut step-3 upload replaced by the real one
    assert {o.split("/")[1].split(".")[0] for o in objects if o.startswith("checkpoints/")} == {"step-3", "step-4"}
    assert {"config.yaml", "metrics.jsonl", "store.sqlite"} <= set(objects)
    remote_metrics = [json.loads(x) for x in s3.filesystem().cat_file(f"{root}/metrics.jsonl").decode().splitlines()]
    local_metrics = [json.loads(x) for x in (straight / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in remote_metrics] == [1, 2, 3, 4]
    assert [m["reward_mean"] for m in remote_metrics] == [m["reward_mean"] for m in local_metrics]


def test_the_store_killed_mid_run_ends_in_one_line_and_a_local_checkpoint(own_s3, tmp_path, monkeypatch, capsys):
    _fresh_home(tmp_path / "home", monkeypatch)
    published = []
    real = storage.publish_checkpoint

    def publish_then_kill(ckpt, url, step, keep=0):
        if published:
            own_s3.stop()  # the store dies after step 1 is published
        real(ckpt, url, step, keep)
        published.append(step)

    monkeypatch.setattr(storage, "publish_checkpoint", publish_then_kill)
    code = main(["train", "configs/tiny-cpu.yaml", "--run-dir", own_s3.prefix, "--steps", "3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and published == [1] and len(err) == 1  # one line, no traceback
    line = err[0]
    assert line.startswith("temper: error: could not publish checkpoint step-2") and "step-2 is saved locally only" in line
    assert f"temper train --resume {own_s3.prefix}" in line
    assert (mirror_dir(own_s3.prefix) / "checkpoints" / "step-2" / "model.safetensors").is_file()
    assert not (mirror_dir(own_s3.prefix) / "checkpoints" / "step-3").exists()


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
