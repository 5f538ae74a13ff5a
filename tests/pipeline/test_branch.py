"""`temper pipeline --from RUN`: what a new run reuses from a finished one, decided by what each
stage depends on (the end-to-end branch of a real run is in test_pipeline_run.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tempering.cli.main import main
from tempering.errors import RunDirError
from tempering.pipeline.branch import branch
from tempering.pipeline.config import load_pipeline
from tempering.pipeline.run import stages
from tempering.pipeline.stages import eval_file, eval_splits

CONFIG = Path(__file__).resolve().parents[2] / "configs" / "tiny-pipeline.yaml"
POINTS = ("base", "sft", "rl", "rl-shuffled")


def _finished_run(root: Path) -> Path:
    """A run directory as a finished tiny pipeline leaves it (files stand in for the outputs)."""
    cfg, data = load_pipeline(CONFIG)
    root.mkdir()
    (root / "pipeline.yaml").write_text(yaml.safe_dump(data))
    stages = {}
    for point in POINTS:
        for group in ("envs", "watch"):
            for env_id, spec in cfg.env_evals(group).items():
                for split in eval_splits(cfg, env_id, spec):
                    eval_file(root, point, env_id, split).parent.mkdir(parents=True, exist_ok=True)
                    eval_file(root, point, env_id, split).write_text(json.dumps({"point": point}))
        stages[f"eval-{point}"] = {"status": "done", "seconds": 60.0}
    (root / "data").mkdir()
    (root / "data" / "demos.jsonl").write_text("{}\n")
    stages["demos"] = {"status": "done", "seconds": 30.0, "demos": {"path": str(root / "data" / "demos.jsonl")}}
    for stage, source in (("sft", None), ("rl", "sft"), ("rl-shuffled", "sft")):
        ckpt = root / stage / "checkpoints" / "final"
        ckpt.mkdir(parents=True)
        (ckpt / "model.safetensors").write_bytes(b"w" * (2 << 20))
        (ckpt / "config.json").write_text("{}")
        (root / stage / "store.sqlite").write_bytes(b"s" * (2 << 20))  # written in place when a stage goes on
        (root / stage / "config.yaml").write_text(f"model:\n  name: {root / 'sft' / 'checkpoints' / 'final'}\n")
        stages[stage] = {"status": "done", "seconds": 120.0, "checkpoint": str(ckpt), "steps": 1,
                         "model": stages[source]["checkpoint"] if source else "tiny-random"}
    (root / "stages").mkdir()
    for stage, record in stages.items():
        (root / "stages" / f"{stage}.json").write_text(json.dumps({k: v for k, v in record.items() if k != "status"}))
    (root / "pipeline.json").write_text(json.dumps({"stages": stages}))
    return root


def _branch(src: Path, dst: Path, *sets: str) -> list[str]:
    cfg, data = load_pipeline(CONFIG, list(sets))
    return branch(src, dst, cfg, data, [s.name for s in stages("shuffled")])


def test_a_changed_rl_section_keeps_everything_before_rl(tmp_path):
    src = _finished_run(tmp_path / "src")
    before = (src / "pipeline.json").read_text()
    reused = _branch(src, tmp_path / "new", "rl.optim.lr=5.0e-5")
    assert [r for r in reused if "/" not in r] == ["demos", "sft", "eval-base", "eval-sft"]
    state = json.loads((tmp_path / "new" / "pipeline.json").read_text())["stages"]
    assert list(state) == ["eval-base", "demos", "sft", "eval-sft"]  # in the pipeline's order
    assert not any(r.startswith(("rl/", "rl-shuffled/")) for r in reused)
    sft = Path(state["sft"]["checkpoint"])
    assert sft.is_relative_to(tmp_path / "new") and (sft / "config.json").is_file()  # re-rooted, copied
    assert (sft / "model.safetensors").stat().st_ino == (src / "sft/checkpoints/final/model.safetensors").stat().st_ino
    assert Path(state["demos"]["demos"]["path"]).is_relative_to(tmp_path / "new")
    assert state["sft"]["reused_from"] == str(src) and state["sft"]["seconds"] == 120.0  # its measured time
    assert json.loads((tmp_path / "new" / "stages" / "sft.json").read_text())["checkpoint"] == str(sft)
    assert (src / "pipeline.json").read_text() == before  # the source run is untouched
    # outside checkpoints/ everything is a copy (a report rewritten, a store grown stay in their run)
    assert (tmp_path / "new" / "sft" / "store.sqlite").stat().st_ino != (src / "sft" / "store.sqlite").stat().st_ino


def test_a_changed_env_option_keeps_only_the_other_envs_base_evaluations(tmp_path):
    src = _finished_run(tmp_path / "src")
    reused = _branch(src, tmp_path / "new", "options.sql/sqlite-v1.difficulty=3")
    assert not {"demos", "sft", "rl", "rl-shuffled", "eval-base"} & set(reused)  # eval-base is incomplete: it runs
    assert {r.split("/", 1)[0] for r in reused} == {"base"}
    assert not any("sqlite" in r for r in reused) and any("humaneval" in r for r in reused)


def test_a_changed_evaluation_spec_reevaluates_that_env_at_every_point(tmp_path):
    src = _finished_run(tmp_path / "src")
    reused = _branch(src, tmp_path / "new", "eval.envs.sql/sqlite-v1.n=5")
    assert {"demos", "sft", "rl", "rl-shuffled"} <= set(reused)
    assert not any(r.startswith("eval-") for r in reused)
    assert not any("sqlite" in r for r in reused)
    assert {r.split("/", 1)[0] for r in reused if "humaneval" in r} == set(POINTS)


def test_more_rl_updates_extend_the_finished_rl_stages_instead_of_redoing_them(tmp_path):
    src = _finished_run(tmp_path / "src")
    reused = _branch(src, tmp_path / "new", "rl.train.steps=3")
    assert [r for r in reused if "/" not in r] == ["demos", "sft", "rl (extended)", "rl-shuffled (extended)",
                                                  "eval-base", "eval-sft"]
    state = json.loads((tmp_path / "new" / "pipeline.json").read_text())["stages"]
    assert state["rl"]["status"] == "extending" and state["rl"]["seconds"] == 120.0 and state["rl"]["steps_before"] == 1
    new = tmp_path / "new" / "rl"
    assert (new / "checkpoints/final/model.safetensors").stat().st_ino == \
        (src / "rl/checkpoints/final/model.safetensors").stat().st_ino
    assert (new / "store.sqlite").stat().st_ino != (src / "rl/store.sqlite").stat().st_ino  # a copy: it grows
    assert str(tmp_path / "new" / "sft") in (new / "config.yaml").read_text()  # continues from this run's SFT
    assert not (tmp_path / "new" / "stages" / "rl.json").exists()  # not done: the pipeline runs it on
    # a cosine schedule would make the first updates differ; fewer updates than it made are no extension
    for change in (["rl.train.steps=3", "rl.optim.schedule=cosine"], ["rl.train.steps=1", "rl.train.max_minutes=5"]):
        got = _branch(src, tmp_path / change[-1], *change)
        assert not any(r.startswith("rl") for r in got), change


def test_branching_refuses_what_it_cannot_do_with_one_clear_error(tmp_path, capsys):
    src = _finished_run(tmp_path / "src")
    with pytest.raises(RunDirError, match="not a pipeline run directory"):
        _branch(tmp_path, tmp_path / "new")
    with pytest.raises(RunDirError, match="drop --from"):
        _branch(src, src)
    _branch(src, tmp_path / "new")
    assert _branch(src, tmp_path / "new") == []  # the same command again continues the new run
    other = _finished_run(tmp_path / "other")
    assert main(["pipeline", str(CONFIG), "--run-dir", str(tmp_path / "new"), "--from", str(other)]) == 2
    assert "already holds a run" in capsys.readouterr().err
