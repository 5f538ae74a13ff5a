"""`--model` at a URL against a real SeaweedFS server (tests/conftest.py): a published checkpoint,
a run's newest checkpoint or a plain model folder, each downloaded once into a local copy."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tempering import storage
from tempering.cli.main import main
from tempering.errors import ModelNotFoundError
from tempering.models import load, resolve_path
from tempering.models.presets import cache_dir


def _fresh_home(path, monkeypatch):
    """An empty TEMPERING_HOME that shares only the built presets."""
    models = cache_dir() / "models"
    path.mkdir()
    (path / "models").symlink_to(models)
    monkeypatch.setenv("TEMPERING_HOME", str(path))


def _checkpoint(tiny, folder, step: int):
    """tiny-random laid out as trainer/checkpoint.py lays a checkpoint out."""
    ckpt = folder / "checkpoints" / f"step-{step}"
    shutil.copytree(tiny, ckpt)
    (ckpt / "optimizer.pt").write_bytes(b"o" * 4096)
    (ckpt / "trainer_state.json").write_text(json.dumps({"step": step}))
    return ckpt


def _same_weights(a, b) -> bool:
    wa, wb = load(str(a)).model.state_dict(), load(str(b)).model.state_dict()
    return wa.keys() == wb.keys() and all(torch.equal(wa[k], wb[k]) for k in wa)


def test_a_checkpoint_url_is_a_model(s3, tmp_path, monkeypatch):
    tiny = resolve_path("tiny-random")
    _fresh_home(tmp_path / "home", monkeypatch)
    run = storage.join(s3.prefix, "run")
    storage.publish_checkpoint(_checkpoint(tiny, tmp_path / "run", 3), run, 3)
    url = storage.join(run, "checkpoints", "step-3")
    local = resolve_path(url)
    assert local.is_relative_to(cache_dir() / "remote-models") and (local / "config.json").is_file()
    assert not (local / "optimizer.pt").exists() and not (local / "trainer_state.json").exists()  # trainer state left
    assert _same_weights(local, tiny)
    assert resolve_path(run) == local  # a run URL: its newest complete checkpoint, the same copy
    s3.filesystem().rm(f"{s3.prefix[5:]}/run/checkpoints/step-3/model.safetensors")
    assert resolve_path(url) == local  # fetched once: the copy is keyed by the manifest, which is unchanged


def test_a_model_folder_url_and_a_missing_one(s3, tmp_path, monkeypatch, capsys):
    tiny = resolve_path("tiny-random")
    _fresh_home(tmp_path / "home", monkeypatch)
    folder = storage.join(s3.prefix, "models", "tiny")
    for path in (p for p in tiny.rglob("*") if p.is_file()):
        storage.put(path, storage.join(folder, path.relative_to(tiny).as_posix()))
    assert _same_weights(resolve_path(folder), tiny)
    out = tmp_path / "eval.json"
    assert main(["eval", "--model", folder, "--env", "math/arith-v1", "--n", "2", "--max-new-tokens", "4",
                 "--out", str(out)]) == 0
    assert json.loads(out.read_text())["n"] == 2
    with pytest.raises(ModelNotFoundError, match="not found"):
        resolve_path(storage.join(s3.prefix, "nothing"))
    capsys.readouterr()
    assert main(["eval", "--model", storage.join(s3.prefix, "models"), "--env", "math/arith-v1", "--n", "1"]) == 2
    assert "is neither a published checkpoint" in capsys.readouterr().err
