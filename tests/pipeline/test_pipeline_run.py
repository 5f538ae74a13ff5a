"""`temper pipeline` end to end on tiny-random: every stage, killed mid-SFT with SIGKILL and
resumed, the shuffled-reward control, pipeline.json and the table."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tempering.cli.main import main
from tempering.eval.stats import mcnemar_exact, paired
from tempering.trainer.collect import shuffle_rewards
from tempering.trainer.group import Group

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs" / "tiny-pipeline.yaml"
HARNESS_S = 900  # wide: the whole tiny pipeline takes a few minutes on 2 cores


def _temper(*args, **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tempering.cli.main", "pipeline", str(CONFIG), *args],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, **kw)


def _stage_processes(run: Path) -> list[int]:
    out = subprocess.run(["pgrep", "-f", f"tempering.pipeline.child {run} "], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


def test_pipeline_runs_every_stage_and_resumes_after_kill(tmp_path, shared_sandbox):
    run = tmp_path / "pipe"
    flags = ["--run-dir", str(run), "--control", "shuffled", "--set", "sft.train.steps=4"]
    first = _temper(*flags)
    deadline = time.monotonic() + HARNESS_S
    while not (run / "sft" / "checkpoints" / "step-1").is_dir():  # killed mid-SFT, after its first checkpoint
        assert first.poll() is None, first.stdout.read()
        assert time.monotonic() < deadline, "SFT never wrote a checkpoint"
        time.sleep(0.2)
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(60)
    state = json.loads((run / "pipeline.json").read_text())
    assert state["stages"]["eval-base"]["status"] == "done"
    assert state["stages"]["sft"]["status"] == "running"
    for _ in range(100):  # the stage's child died with the pipeline
        if not _stage_processes(run):
            break
        time.sleep(0.1)
    else:
        pytest.fail("a pipeline child outlived the killed pipeline")

    second = _temper(*flags)
    out, _ = second.communicate(timeout=HARNESS_S)
    assert second.returncode == 0, out
    state = json.loads((run / "pipeline.json").read_text())
    stages = state["stages"]
    assert [s for s, r in stages.items() if r["status"] == "done"] == [
        "eval-base", "demos", "sft", "eval-sft", "rl", "eval-rl", "rl-shuffled", "eval-rl-shuffled"]
    assert stages["sft"]["attempts"] == 2 and stages["eval-base"]["attempts"] == 1
    steps = [json.loads(line)["step"] for line in (run / "sft" / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]  # resumed from its checkpoint: no step lost or repeated
    for stage in ("sft", "rl", "rl-shuffled"):  # each an HF directory
        assert (Path(stages[stage]["checkpoint"]) / "config.json").is_file()
        assert stages[stage]["peak_rss_mb"] > 0 and stages[stage]["seconds"] > 0 and stages[stage]["cpu_hours"] > 0
    assert stages["rl"]["model"] == stages["sft"]["checkpoint"] == stages["rl-shuffled"]["model"]
    rl_cfg = (run / "rl" / "config.yaml").read_text()
    assert "beta: 0.04" in rl_cfg and stages["sft"]["checkpoint"] in rl_cfg  # KL to the SFT model
    assert "shuffle: true" in (run / "rl-shuffled" / "config.yaml").read_text()
    assert stages["rl-shuffled"]["steps"] == stages["rl"]["steps"]  # as many updates as the real stage
    assert stages["demos"]["demos"]["split_guard"]["leaks"] == 0
    sampled = next(e for e in stages["demos"]["demos"]["per_env"] if e["env"] == "math/arith-v1")
    assert sampled["tasks_tried"] == 8  # the base model answered every task it was given
    assert sampled["kept"] + sum(sampled["dropped"].values()) == 8
    sql = state["results"]["sql/sqlite-v1"]["test"]
    assert set(sql["points"]) == {"base", "sft", "rl", "rl-shuffled"}
    assert sql["points"]["base"]["n"] == 4 and 0 <= sql["points"]["base"]["ci"][0] <= sql["points"]["base"]["ci"][1]
    assert set(sql["paired"]) == {"base->sft", "sft->rl", "base->rl", "sft->rl-shuffled", "rl-shuffled->rl"}
    assert state["results"]["code/humaneval-v1"]["test"]["group"] == "watch"
    report = (run / "report.md").read_text()
    assert "| sql/sqlite-v1 | test |" in report and "| code/humaneval-v1 (not trained) | test |" in report
    assert "| math/arith-v1 (SFT replays the base's own verified replies) | test |" in report
    assert ("| env | split | RL vs SFT | control vs SFT | RL vs control (paired) | control within a third "
            "| RL beats control |") in report
    html = (run / "rl" / "report.html").read_text()  # the stage's HTML report carries the pipeline's table
    assert "<td>sql/sqlite-v1</td><td>test</td><td>rl-shuffled</td>" in html

    third = _temper(*flags)  # everything done: nothing runs again
    out, _ = third.communicate(timeout=HARNESS_S)
    assert third.returncode == 0 and "== " not in out, out

    # a new run from this one with another RL learning rate: everything before RL is reused
    branched, source_state = tmp_path / "branch", (run / "pipeline.json").read_text()
    fourth = _temper("--run-dir", str(branched), "--from", str(run), "--set", "sft.train.steps=4",
                     "--set", "rl.optim.lr=5.0e-5")
    out, _ = fourth.communicate(timeout=HARNESS_S)
    assert fourth.returncode == 0, out
    new = json.loads((branched / "pipeline.json").read_text())["stages"]
    assert [s for s in new if new[s].get("reused_from") == str(run)] == ["eval-base", "demos", "sft", "eval-sft"]
    assert new["rl"]["status"] == new["eval-rl"]["status"] == "done" and new["rl"]["attempts"] == 1
    assert new["rl"]["model"] == new["sft"]["checkpoint"] and Path(new["sft"]["checkpoint"]).is_relative_to(branched)
    assert "lr: 5.0e-05" in (branched / "rl" / "config.yaml").read_text()
    assert (run / "pipeline.json").read_text() == source_state

    # one more RL update: the finished stage goes on from its last checkpoint, in the new run only
    longer = tmp_path / "longer"
    fifth = _temper("--run-dir", str(longer), "--from", str(run), "--set", "sft.train.steps=4",
                    "--set", "rl.train.steps=2", "--stage", "rl")
    out, _ = fifth.communicate(timeout=HARNESS_S)
    assert fifth.returncode == 0, out
    rl = json.loads((longer / "pipeline.json").read_text())["stages"]["rl"]
    assert rl["status"] == "done" and rl["steps"] == 2 and rl["extended_from"] == str(run) and rl["attempts"] == 1
    steps = [json.loads(line)["step"] for line in (longer / "rl" / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2] and len((run / "rl" / "metrics.jsonl").read_text().splitlines()) == 1
    assert (run / "pipeline.json").read_text() == source_state


def test_pipeline_refuses_a_changed_training_config(tmp_path, capsys):
    run = tmp_path / "pipe"
    run.mkdir()
    trained = yaml.safe_load(CONFIG.read_text())
    trained["rl"]["optim"]["lr"] *= 2
    (run / "pipeline.yaml").write_text(yaml.safe_dump(trained))
    assert main(["pipeline", str(CONFIG), "--run-dir", str(run)]) == 2
    err = capsys.readouterr().err
    assert "another config (rl differ)" in err and f"--from {run}" in err


def test_pipeline_bad_config_is_one_clear_error(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("model: tiny-random\neval: {envs: {sql/sqlite-v1: {n: 2}}}\nsft: {optim: {lr: fast}}\n")
    assert main(["pipeline", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "pipeline section sft" in err and "optim.lr" in err
    assert main(["pipeline", str(tmp_path / "missing.yaml")]) == 2
    assert "not found" in capsys.readouterr().err


def test_shuffled_rewards_keep_the_distribution_not_the_credit():
    groups = [Group(None, None, (1,), [(2,)] * 4, [(1,)] * 4, [1.0, 0.0, 0.0, 0.5], [True, False, False, False])
              for _ in range(20)]
    shuffle_rewards(groups, random.Random(0))
    assert all(sorted(g.rewards) == [0.0, 0.0, 0.5, 1.0] for g in groups)
    assert all(g.passed == [True, False, False, False] for g in groups)  # pass rates still the verifier's
    assert sum(g.rewards[0] != 1.0 for g in groups) >= 10  # credit moved in most groups


def test_exact_mcnemar():
    assert mcnemar_exact(0, 5) == pytest.approx(0.0625)
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(0, 0) == 1.0
    assert mcnemar_exact(4, 36) == pytest.approx(mcnemar_exact(36, 4))
    assert 1e-7 < mcnemar_exact(4, 36) < 1e-6  # 2 * P(X <= 4), X ~ Bin(40, 1/2) = 1.857e-07
    assert paired([False, True, False], [True, True, False]) == {"wrong_to_right": 1, "right_to_wrong": 0, "p": 1.0}


def test_the_control_check_holds_the_control_to_a_third_of_the_real_gain():
    from tempering.pipeline.table import control_checks

    def split(real: float, control: float, group: str = "envs") -> dict:
        t = {"wrong_to_right": 3, "right_to_wrong": 1, "p": 0.625}
        return {"group": group, "paired": {"sft->rl": {**t, "points": real}, "sft->rl-shuffled": {**t, "points": control},
                                           "rl-shuffled->rl": t}}

    results = {"a": {"test": split(9.0, 3.0), "unseen": split(9.0, 3.5)}, "b": {"test": split(-2.0, -5.0)},
               "c": {"test": split(9.0, 0.0, group="watch")}, "d": {"test": {"group": "envs", "paired": {}}}}
    got = {(c["env"], c["split"]): c["passes"] for c in control_checks(results)}
    # a third exactly passes, a hair above fails; no real gain fails whatever the control did;
    # watch envs and envs without both RL points are not checked
    assert got == {("a", "test"): True, ("a", "unseen"): False, ("b", "test"): False}
    assert not any(c["rl_beats_control"] for c in control_checks(results))  # 3/1 at p = 0.625
    strong = {"wrong_to_right": 12, "right_to_wrong": 2, "p": 0.013}
    results["a"]["test"]["paired"]["rl-shuffled->rl"] = strong
    results["b"]["test"]["paired"]["rl-shuffled->rl"] = {**strong, "wrong_to_right": 2, "right_to_wrong": 12}
    beats = {(c["env"], c["split"]): c["rl_beats_control"] for c in control_checks(results)}
    assert beats == {("a", "test"): True, ("a", "unseen"): False, ("b", "test"): False}  # the control winning is no win


def test_the_report_counts_passes_by_task_family(tmp_path):
    from tempering.pipeline.table import _point, family_lines

    def eval_file(name: str, passed: list[tuple[str, bool]]) -> Path:
        items = [{"id": f"t/{i}", "family": fam, "passed": ok} for i, (fam, ok) in enumerate(passed)]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"accuracy": 0.0, "ci_low": 0, "ci_high": 1, "n": len(items), "correct": 0,
                                    "format_rate": 1.0, "mean_response_tokens": 1, "seconds": 1, "items": items}))
        return path

    base = _point(eval_file("base", [("growth", False), ("lookup", False), ("lookup", True)]))
    sft = _point(eval_file("sft", [("growth", True), ("lookup", True), ("lookup", True)]))
    assert base["families"] == {"growth": [0, 1], "lookup": [1, 2]}
    one = _point(eval_file("one", [(None, True)]))
    results = {"fin": {"test": {"group": "envs", "points": {"base": base, "sft": sft}}},
               "he": {"test": {"group": "watch", "points": {"base": base}}},  # not trained: not broken down
               "arith": {"test": {"group": "envs", "points": {"base": one}}}}  # no families
    lines = family_lines(results, ["base", "sft", "rl"])
    assert lines[3:] == ["fin, test:", "", "| family | base | sft |", "|---|---|---|", "| growth | 0/1 | 1/1 |",
                         "| lookup | 1/2 | 2/2 |"]

    def cad_file(name: str, rewards: list[tuple[str, float]]) -> Path:  # partial credit: overlap
        items = [{"id": f"t/{i}", "family": fam, "passed": r == 1.0, "reward": r} for i, (fam, r) in enumerate(rewards)]
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps({"accuracy": 0.0, "ci_low": 0, "ci_high": 1, "n": len(items), "correct": 0,
                                    "format_rate": 1.0, "mean_response_tokens": 1, "seconds": 1, "items": items}))
        return path

    cad = _point(cad_file("cad", [("u_channel", 0.1), ("u_channel", 0.0), ("plate", 1.0)]))
    assert cad["family_reward"] == {"plate": 1.0, "u_channel": 0.05} and "family_reward" not in sft
    lines = family_lines({"cad": {"unseen": {"group": "envs", "points": {"sft": cad}}}}, ["sft"])
    assert lines[-2:] == ["| plate | 1/1 (reward 1.00) |", "| u_channel | 0/2 (reward 0.05) |"]


def test_the_report_gives_the_wall_time_of_the_pipeline_apart_from_the_control():
    from tempering.pipeline.table import report_lines, wall_minutes

    stages = {"eval-base": {"status": "done", "seconds": 600}, "sft": {"status": "done", "seconds": 1200},
              "rl": {"status": "done", "seconds": 1800}, "rl-shuffled": {"status": "done", "seconds": 1500},
              "eval-rl-shuffled": {"status": "done", "seconds": 300},
              "demos": {"status": "done", "seconds": 900, "reused_from": "runs/a"}}
    assert wall_minutes({"stages": stages}) == {"pipeline": 60.0, "control": 30.0, "reused": ["demos"]}
    lines = report_lines({"name": "p", "stages": stages})
    assert ("Wall time of the stages run in this directory: 60 minutes for the pipeline, and 30 more for the control "
            "(demos reused from another run, not counted).") in lines
    assert not any(line.startswith("Wall time") for line in report_lines({"name": "p", "stages": {}}))


def test_the_control_makes_as_many_updates_as_the_real_rl_stage(tmp_path):
    from tempering.pipeline.config import load_pipeline
    from tempering.pipeline.stages import matched_control

    cfg, _ = load_pipeline(ROOT / "configs" / "smollm2-pipeline.yaml")
    rl = cfg.stage_config("rl", "some/sft-checkpoint", reward={"shuffle": True})
    assert rl.train.max_minutes > 0 and rl.train.steps != 32
    assert matched_control(rl, tmp_path) == rl  # the real stage has not run: the config as given
    (tmp_path / "stages").mkdir()
    (tmp_path / "stages" / "rl.json").write_text(json.dumps({"checkpoint": "x", "steps": 32, "tokens": None}))
    control = matched_control(rl, tmp_path)
    assert (control.train.steps, control.train.max_minutes) == (32, 0)  # its steps, no clock
    assert control.optim == rl.optim and control.rollout == rl.rollout and control.reward.shuffle


def test_a_multi_reply_cell_shows_its_first_reply_passes():
    from tempering.pipeline.table import report_lines

    point = {"accuracy": 0.3, "ci": [0.2, 0.4], "n": 90, "first_correct": 12, "repeated": 40}
    results = {"sql/handwritten-v1": {"test": {"group": "watch", "points": {"sft": point}, "paired": {}}}}
    row = next(line for line in report_lines({"name": "p", "results": results}) if "sql/handwritten-v1" in line)
    assert "30.0% [20%, 40%] n=90, first reply 12, 40 repeated" in row
    results["sql/handwritten-v1"]["test"]["points"]["sft"] = {**point, "first_correct": None}
    row = next(line for line in report_lines({"name": "p", "results": results}) if "sql/handwritten-v1" in line)
    assert "first reply" not in row
