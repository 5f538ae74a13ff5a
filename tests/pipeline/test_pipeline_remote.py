"""`temper pipeline --run-dir s3://...` against a real SeaweedFS server (tests/conftest.py): the
tiny pipeline is SIGKILLed mid-SFT on one machine and finished from another (an empty
TEMPERING_HOME in another directory) without redoing a finished stage or a published SFT step;
a third machine finds it done, and a fourth branches a new run from it with `--from s3://...`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tempering import storage
from tempering.models import resolve_path
from tempering.models.presets import cache_dir
from tempering.trainer.remote import mirror_dir

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "tiny-pipeline.yaml"
HARNESS_S = 900  # wide: the tiny pipeline takes a few minutes on 2 cores
# three SFT steps (one to cut after, two to resume); one small evaluation: the stages, not their scores, are tested
SFT = ("--set", "sft.train.steps=3", "--set", "eval.watch={}", "--set", "eval.envs={sql/sqlite-v1: {n: 2}}")


def _machine(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """(working directory, TEMPERING_HOME) of another machine: both empty but for the built presets."""
    cwd, home = tmp_path / name / "cwd", tmp_path / name / "home"
    cwd.mkdir(parents=True)
    home.mkdir()
    (home / "models").symlink_to(cache_dir() / "models")
    return cwd, home


def _temper(machine: tuple[Path, Path], *args: str) -> subprocess.Popen:
    cwd, home = machine
    return subprocess.Popen([sys.executable, "-m", "tempering.cli.main", "pipeline", str(CONFIG), *args], cwd=cwd,
                            env={**os.environ, "TEMPERING_HOME": str(home)}, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


def _finish(proc: subprocess.Popen) -> str:
    out, _ = proc.communicate(timeout=HARNESS_S)
    assert proc.returncode == 0, out
    return out


def _stages(url: str) -> dict:
    return json.loads(storage.read_bytes(storage.join(url, "pipeline.json")))["stages"]


def _steps(url: str) -> list[int]:
    return [json.loads(line)["step"] for line in storage.read_bytes(storage.join(url, "metrics.jsonl")).splitlines()]


def test_a_pipeline_at_a_url_is_cut_on_one_machine_and_finished_on_another(s3, tmp_path, monkeypatch, shared_sandbox):
    url = storage.join(s3.prefix, "pipe")
    first = _temper(_machine(tmp_path, "a"), "--run-dir", url, *SFT)
    deadline = time.monotonic() + HARNESS_S
    while not storage.exists(storage.join(url, "sft", "checkpoints", "step-1.manifest.json")):  # SFT step 1 published
        assert first.poll() is None, first.stdout.read()
        assert time.monotonic() < deadline, "SFT never published a checkpoint"
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(60)
    cut = _stages(url)
    assert [cut[s]["status"] for s in ("eval-base", "demos", "sft")] == ["done", "done", "running"]
    assert storage.exists(storage.join(url, "data", "demos.jsonl"))
    assert storage.ls(storage.join(url, "eval", "base"))  # the stages' outputs went up with pipeline.json

    machine_b = _machine(tmp_path, "b")
    out = _finish(_temper(machine_b, "--run-dir", url, *SFT))
    assert "== eval-base" not in out and "== demos" not in out and "== sft" in out
    stages = _stages(url)
    assert all(r["status"] == "done" for r in stages.values()) and list(stages)[-1] == "eval-rl"
    assert {s: stages[s]["attempts"] for s in ("eval-base", "demos", "sft", "rl")} == \
        {"eval-base": 1, "demos": 1, "sft": 2, "rl": 1}
    assert _steps(storage.join(url, "sft")) == [1, 2, 3]  # resumed from the published step: none lost or repeated
    assert storage.latest_complete(storage.join(url, "sft")) == 3 and storage.latest_complete(storage.join(url, "rl")) == 1
    # in the store, paths name the URL; in machine b's mirror, the mirror
    assert stages["sft"]["checkpoint"] == storage.join(url, "sft", "checkpoints", "step-3") == stages["rl"]["model"]
    monkeypatch.setenv("TEMPERING_HOME", str(machine_b[1]))
    mirror = mirror_dir(url)
    local = json.loads((mirror / "pipeline.json").read_text())["stages"]
    assert local["sft"]["checkpoint"] == str(mirror / "sft" / "checkpoints" / "step-3")
    assert (resolve_path(stages["rl"]["checkpoint"]) / "config.json").is_file()  # a URL --model takes

    out = _finish(_temper(_machine(tmp_path, "c"), "--run-dir", url, *SFT))  # a third machine: nothing to do
    assert "== " not in out and f"wrote {url}/pipeline.json" in out

    branched = tmp_path / "d" / "branch"
    out = _finish(_temper(_machine(tmp_path, "d"), "--run-dir", str(branched), "--from", url, *SFT,
                          "--set", "rl.optim.lr=5.0e-5", "--stage", "rl"))
    new = json.loads((branched / "pipeline.json").read_text())["stages"]
    assert [s for s in new if new[s].get("reused_from") == url] == ["eval-base", "demos", "sft", "eval-sft"]
    assert new["rl"]["status"] == "done" and new["rl"]["attempts"] == 1
    assert new["rl"]["model"] == new["sft"]["checkpoint"] == str(branched / "sft" / "checkpoints" / "step-3")
    assert "lr: 5.0e-05" in (branched / "rl" / "config.yaml").read_text()
