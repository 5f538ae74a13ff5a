"""tempering.storage against a real S3-compatible server (SeaweedFS, tests/conftest.py):
whole-file round trips, checkpoints made visible by a manifest written last, cut uploads
ignored and cleaned, keep_checkpoints applied remotely."""

from __future__ import annotations

import json
import sqlite3

import pytest

from tempering import storage
from tempering.errors import StorageError


def _ckpt(root, step: int, payload: bytes = b"w" * 1000):
    """A fake checkpoint folder, as trainer/checkpoint.py lays one out."""
    d = root / f"step-{step}"
    (d / "critic").mkdir(parents=True)
    (d / "model.safetensors").write_bytes(payload + bytes([step]))
    (d / "trainer_state.json").write_text(json.dumps({"step": step}))
    (d / "critic" / "config.json").write_text("{}")
    return d


def _files(s3, under: str = "checkpoints") -> list[str]:
    """Every object under the run's folder, relative (folders a store keeps when emptied are not objects)."""
    root = f"{s3.prefix[5:]}/{under}"
    return sorted(p[len(root) + 1:] for p in s3.filesystem().find(root))


def test_is_remote_and_join():
    assert storage.is_remote("s3://b/run") and storage.is_remote("gs://b/x")
    assert not storage.is_remote("runs/x") and not storage.is_remote("file:///tmp/x") and not storage.is_remote("")
    assert storage.join("s3://b/run/", "checkpoints", "step-1") == "s3://b/run/checkpoints/step-1"


def test_round_trip_of_whole_files(s3, tmp_path):
    src = tmp_path / "a.bin"
    src.write_bytes(bytes(range(256)) * 100)
    url = storage.join(s3.prefix, "a.bin")
    assert not storage.exists(url)
    storage.put(src, url)
    assert storage.exists(url) and storage.ls(s3.prefix) == ["a.bin"]  # no .tmp left behind
    storage.get(url, tmp_path / "back" / "a.bin")
    assert (tmp_path / "back" / "a.bin").read_bytes() == src.read_bytes()
    with storage.open(url) as f:
        assert f.read(4) == bytes(range(4))
    storage.rm(url)
    assert not storage.exists(url) and storage.ls(s3.prefix) == []


def test_local_paths_go_through_the_same_calls(tmp_path):
    src = tmp_path / "x.txt"
    src.write_text("hi")
    storage.put(src, str(tmp_path / "out" / "x.txt"))
    assert (tmp_path / "out" / "x.txt").read_text() == "hi" and storage.ls(str(tmp_path / "out")) == ["x.txt"]


def test_a_checkpoint_is_visible_once_its_manifest_is_and_comes_back_whole(s3, tmp_path):
    ckpt = _ckpt(tmp_path / "local", 3)
    assert storage.latest_complete(s3.prefix) is None
    storage.publish_checkpoint(ckpt, s3.prefix, 3)
    assert storage.latest_complete(s3.prefix) == 3
    manifest = json.loads(s3.filesystem().cat_file(f"{s3.prefix[5:]}/checkpoints/step-3.manifest.json"))
    assert sorted(e["path"] for e in manifest["files"]) == ["critic/config.json", "model.safetensors", "trainer_state.json"]
    back = storage.fetch_checkpoint(s3.prefix, 3, tmp_path / "mirror")
    assert back == tmp_path / "mirror" / "checkpoints" / "step-3"
    assert {p.relative_to(back): p.read_bytes() for p in back.rglob("*") if p.is_file()} == \
        {p.relative_to(ckpt): p.read_bytes() for p in ckpt.rglob("*") if p.is_file()}


def test_a_cut_upload_is_ignored_then_cleaned_by_the_next_publish(s3, tmp_path):
    """SIGKILL mid-upload, made deterministic: step 2's files are there, its manifest is not."""
    fs, root = s3.filesystem(), s3.prefix[5:]
    storage.publish_checkpoint(_ckpt(tmp_path, 1), s3.prefix, 1)
    cut = _ckpt(tmp_path, 2)
    fs.put_file(str(cut / "model.safetensors"), f"{root}/checkpoints/step-2/model.safetensors")
    assert storage.latest_complete(s3.prefix) == 1
    storage.publish_checkpoint(_ckpt(tmp_path, 3), s3.prefix, 3)
    assert [f for f in _files(s3) if "step-2" in f] == []
    assert storage.latest_complete(s3.prefix) == 3


def test_a_manifest_whose_files_are_missing_or_short_is_skipped(s3, tmp_path):
    fs, root = s3.filesystem(), s3.prefix[5:]
    storage.publish_checkpoint(_ckpt(tmp_path, 1), s3.prefix, 1)
    storage.publish_checkpoint(_ckpt(tmp_path, 2), s3.prefix, 2)
    fs.pipe_file(f"{root}/checkpoints/step-2/model.safetensors", b"short")
    assert storage.latest_complete(s3.prefix) == 1
    fs.rm(f"{root}/checkpoints/step-1/trainer_state.json")
    assert storage.latest_complete(s3.prefix) is None


def test_a_damaged_file_fails_the_download_with_one_clear_error(s3, tmp_path):
    fs, root = s3.filesystem(), s3.prefix[5:]
    storage.publish_checkpoint(_ckpt(tmp_path, 1), s3.prefix, 1)
    fs.pipe_file(f"{root}/checkpoints/step-1/model.safetensors", b"x" * 1001)  # same size, other bytes
    with pytest.raises(StorageError, match="sha256"):
        storage.fetch_checkpoint(s3.prefix, 1, tmp_path / "mirror")
    assert not (tmp_path / "mirror" / "checkpoints" / "step-1").exists()


def test_keep_checkpoints_applies_remotely(s3, tmp_path):
    for step in (1, 2, 3, 4):
        storage.publish_checkpoint(_ckpt(tmp_path, step), s3.prefix, step, keep=2)
    files = _files(s3)
    assert {f.split("/")[0].split(".")[0] for f in files} == {"step-3", "step-4"}
    assert "step-3.manifest.json" in files and "step-4/model.safetensors" in files


def test_run_files_sync_whole_with_a_consistent_store(s3, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("name: x\n")
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    db = sqlite3.connect(run / "store.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (42)")  # still in the WAL: the main file alone lacks it
    storage.sync_run_files(run, s3.prefix)
    assert storage.ls(s3.prefix) == ["config.yaml", "metrics.jsonl", "store.sqlite"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "store.sqlite-wal").write_bytes(b"stale")
    assert sorted(storage.fetch_run_files(s3.prefix, other)) == ["config.yaml", "metrics.jsonl", "store.sqlite"]
    assert not (other / "store.sqlite-wal").exists()
    assert sqlite3.connect(other / "store.sqlite").execute("SELECT x FROM t").fetchall() == [(42,)]
    db.close()


def test_bad_credentials_end_in_a_storage_error(s3, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong")
    with pytest.raises(StorageError, match="could not publish checkpoint step-1"):
        storage.publish_checkpoint(_ckpt(tmp_path, 1), s3.prefix, 1)


def test_a_snapshot_of_the_run_files_is_what_goes_up_however_the_run_moves_on(s3, tmp_path):
    """What a checkpoint publishes: the run files as they were at its step, though training appends on."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    db = sqlite3.connect(run / "store.sqlite", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("CREATE TABLE t (x)")
    db.execute("INSERT INTO t VALUES (1)")
    snapshot = storage.snapshot_run_files(run, tmp_path / "snapshot")
    assert [p.name for p in snapshot] == ["metrics.jsonl", "store.sqlite"]
    with (run / "metrics.jsonl").open("a") as f:
        f.write('{"step": 2}\n')
    db.execute("INSERT INTO t VALUES (2)")
    storage.put_run_files(tmp_path / "snapshot", s3.prefix)
    assert storage.read_bytes(storage.join(s3.prefix, "metrics.jsonl")) == b'{"step": 1}\n'
    storage.get(storage.join(s3.prefix, "store.sqlite"), tmp_path / "back.sqlite")
    assert sqlite3.connect(tmp_path / "back.sqlite").execute("SELECT x FROM t").fetchall() == [(1,)]
    db.close()
