"""Each command with a tiny budget, and every user mistake ending in one line + exit 2."""

import json
import os
import subprocess
import sys

import pytest

from tempering.cli.main import main

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run(*args: str) -> subprocess.CompletedProcess:
    """The installed console entry point, as a user runs it."""
    return subprocess.run([sys.executable, "-m", "tempering.cli.main", *args], capture_output=True, text=True, cwd=REPO,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)


def test_envs_list_and_check(capsys):
    assert main(["envs", "list"]) == 0
    ids = capsys.readouterr().out.split()
    assert "math/arith-v1" in ids and any(i.startswith("reasoning/") for i in ids)
    assert main(["envs", "check", "math/arith-v1"]) == 0
    assert "ok" in capsys.readouterr().out


def test_train_then_resume_from_the_command_line(tmp_path):
    run = tmp_path / "run"
    first = _run("train", "configs/tiny-cpu.yaml", "--steps", "2", "--run-dir", str(run))
    assert first.returncode == 0, first.stderr
    assert (run / "checkpoints" / "step-2" / "model.safetensors").is_file()
    second = _run("train", "--resume", str(run), "--steps", "4")
    assert second.returncode == 0, second.stderr
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]
    assert (run / "checkpoints" / "step-4").is_dir()


def test_eval_prints_accuracy_with_interval_and_writes_json(tmp_path, capsys):
    out = tmp_path / "e.json"
    assert main(["eval", "--model", "tiny-random", "--env", "math/arith-v1", "--n", "4", "--max-new-tokens", "8",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "accuracy" in printed and "95% CI" in printed
    result = json.loads(out.read_text())
    assert result["n"] == 4 and len(result["items"]) == 4 and 0 <= result["ci_low"] <= result["accuracy"] <= result["ci_high"]


def test_eval_passes_env_options_as_a_pipeline_does(tmp_path):
    """--option difficulty=1 evaluates the env built with it: only difficulty-1 question families."""
    from tempering import envs

    easy = {envs.make("sql/sqlite-v1", difficulty=1).task("test", i).metadata["family"] for i in range(40)}
    out = tmp_path / "e.json"
    assert main(["eval", "--model", "tiny-random", "--env", "sql/sqlite-v1", "--option", "difficulty=1",
                 "--max-turns", "1", "--n", "6", "--max-new-tokens", "4", "--out", str(out)]) == 0
    families = {i["family"] for i in json.loads(out.read_text())["items"]}
    default = {envs.make("sql/sqlite-v1").task("test", i).metadata["family"] for i in range(6)}
    assert not default <= easy  # without the option these six tasks would not all be easy ones
    assert families and families <= easy


@pytest.mark.parametrize("args, expected", [
    (["train", "configs/tiny-cpu.yaml", "--set", "rollout.temprature=0.5"], "unknown config key 'rollout.temprature'. Did you mean rollout.temperature? Valid keys:"),
    (["train", "configs/tiny-cpu.yaml", "--set", "rollout.temperature"], "malformed --set"),
    (["train", "configs/tiny-cpu.yaml", "--set", "model.name=/no/such/model"], "model '/no/such/model' not found"),
    (["train", "configs/tiny-cpu.yaml", "--set", "env.id=math/nope-v1"], "unknown env id 'math/nope-v1'"),
    (["train", "configs/missing.yaml"], "config file 'configs/missing.yaml' not found"),
    (["train", "configs/tiny-cpu.yaml", "--set", "algorithm.name=ppo2"], "unknown algorithm.name 'ppo2': choose one of grpo"),
    (["train", "configs/tiny-cpu.yaml", "--set", "algorithm.kl_estimator=k9"], "unknown algorithm.kl_estimator 'k9'"),
    (["train", "configs/tiny-cpu.yaml", "--set", "rollout.group_size=0"], "rollout.group_size must be at least 1, got 0"),
    (["train", "configs/tiny-cpu.yaml", "--set", "model.device=gpu0"], "unknown device 'gpu0': use auto, cpu, cuda"),
    (["train", "--resume", "/no/such/run"], "is not a run directory"),
    (["eval", "--model", "/no/such/model", "--env", "math/arith-v1"], "model '/no/such/model' not found"),
    (["eval", "--model", "tiny-random", "--env", "nope"], "unknown env id 'nope'"),
    (["eval", "--model", "tiny-random", "--env", "sql/sqlite-v1", "--option", "nope=1"], "has no option 'nope'"),
    (["eval", "--model", "tiny-random", "--env", "sql/sqlite-v1", "--option", "difficulty=9"], "difficulty must be"),
    (["eval", "--model", "tiny-random", "--env", "sql/sqlite-v1", "--option", "difficulty"], "malformed --option"),
])
def test_user_mistakes_exit_2_with_one_clear_line(args, expected, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(REPO)
    if args[0] == "train" and "--resume" not in args:
        args = args + ["--run-dir", str(tmp_path / "r")]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "r").exists()  # a rejected config creates no run directory


def test_console_script_exit_code_is_2_without_traceback():
    proc = _run("train", "configs/tiny-cpu.yaml", "--set", "nonsense")
    assert proc.returncode == 2
    assert "malformed --set" in proc.stderr and "Traceback" not in proc.stderr


def test_settings_lists_every_key_with_its_docstring(capsys):
    from tempering.config import valid_keys

    assert main(["settings"]) == 0
    out = capsys.readouterr().out
    for key in valid_keys():
        assert f"\n{key} = " in "\n" + out, key
    assert "dapo: clip_eps_high=0.28" in out


def test_data_sft_then_train_sft_from_the_command_line(tmp_path, capsys):
    data = tmp_path / "sft.jsonl"
    assert main(["data", "sft", "--env", "math/arith-v1", "--n", "6", "--out", str(data)]) == 0
    rows = [json.loads(x) for x in data.read_text().splitlines()]
    assert len(rows) == 6 and rows[0]["messages"][-1]["role"] == "assistant"
    run = tmp_path / "run"
    assert main(["train", "configs/tiny-cpu.yaml", "--run-dir", str(run), "--steps", "1", "--set", "algorithm.name=sft",
                 "--set", "algorithm.beta=0", "--set", f"data.path={data}", "--set", "data.batch_size=2"]) == 0
    assert (run / "checkpoints" / "step-1" / "model.safetensors").is_file()


def test_asking_for_a_gpu_where_none_is_visible_exits_2_before_the_run_directory(tmp_path, capsys, monkeypatch):
    import torch

    monkeypatch.chdir(REPO)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["train", "configs/tiny-cpu.yaml", "--set", "model.device=cuda", "--run-dir", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "no GPU is visible: set model.device=cpu" in err and err.count("\n") == 1
    assert not (tmp_path / "r").exists()


def test_demo_takes_config_overrides_and_records_the_engine(tmp_path, capsys, monkeypatch):
    """`temper demo --set rollout.engine=...` is how the demo runs on another engine (issue 39);
    the engine it trained with is in demo.json, and a mistyped key is one line and exit 2."""
    monkeypatch.chdir(REPO)
    run = tmp_path / "demo"
    assert main(["demo", "--config", "configs/tiny-cpu.yaml", "--n-eval", "4", "--set", "train.steps=1",
                 "--set", "rollout.engine=hf", "--run-dir", str(run)]) == 0
    summary = json.loads((run / "demo.json").read_text())
    assert summary["engine"] == "hf" and summary["updates"] == 1 and summary["n_eval"] == 4
    assert (run / "eval-before.json").is_file() and (run / "eval-after.json").is_file()
    capsys.readouterr()
    assert main(["demo", "--config", "configs/tiny-cpu.yaml", "--set", "rollout.engin=vllm",
                 "--run-dir", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "rollout.engine" in err and err.count("\n") == 1 and not (tmp_path / "x").exists()
