"""The guard: skills RL does not train, evaluated on validation tasks apart from the reported
test, with a paired test against the start; a significant drop is the guard alert."""

from __future__ import annotations

import json

import pytest

from tempering import envs
from tempering.config import load_config
from tempering.config.schema import GuardConfig
from tempering.errors import ConfigError
from tempering.rollout.fake import ScriptedClient
from tempering.trainer import prepare_run, train
from tempering.trainer.alerts import AlertWatch
from tempering.trainer.guard import Guard, guard_message


def _answers(tasks, right: bool) -> list[str]:
    return [f"Answer: {int(t.reference) + (0 if right else 1)}" for t in tasks]


def test_validation_tasks_are_not_the_reported_ones_and_a_significant_drop_alerts(tmp_path, tiny):
    guard = Guard(GuardConfig(envs={"math/arith-v1": 10}, every=2), tmp_path)
    env, tasks = guard.envs["math/arith-v1"]
    reported = {t.prompt for t in env.tasks("test", 1000)}
    assert not reported & {t.prompt for t in tasks}  # the guard never looks at what evaluations report
    start = guard.check(ScriptedClient(tiny.tokenizer, _answers(tasks, True)), 0)
    assert start["guard/math/arith-v1/accuracy"] == 1.0 and guard_message(start) is None
    assert json.loads((tmp_path / "guard-baseline.json").read_text())["math/arith-v1"] == [True] * 10
    assert guard.due(2) and not guard.due(3)
    half = guard.check(ScriptedClient(tiny.tokenizer, _answers(tasks[:8], True) + _answers(tasks[8:], False)), 2)
    assert half["guard/math/arith-v1/drop"] == pytest.approx(0.2) and half["guard/math/arith-v1/p"] == 0.5
    assert guard_message(half) is None  # 2 of 10 lost: not significant
    lost = guard.check(ScriptedClient(tiny.tokenizer, _answers(tasks, False)), 4)
    assert lost["guard/math/arith-v1/p"] < 0.05 and lost["guard/best_step"] == 0
    alerts = AlertWatch(load_config("configs/tiny-cpu.yaml").alerts).check([{"step": 4, **lost}])
    assert [a.kind for a in alerts] == ["guard"]
    assert alerts[0].message.startswith("a skill RL does not train dropped against the start: math/arith-v1 down 100%")
    assert "best guard accuracy at update 0" in alerts[0].message


def test_a_fixed_set_like_humaneval_is_refused_as_a_guard(tmp_path):
    with pytest.raises(ConfigError, match="code/humaneval-v1 is a fixed set of tasks.*code/synth-v1"):
        Guard(GuardConfig(envs={"code/humaneval-v1": 20}), tmp_path)


def test_a_guarded_run_logs_the_guard_every_n_updates(tmp_path):
    cfg = load_config("configs/tiny-cpu.yaml", ["guard.envs={math/arith-v1: 4}", "guard.every=2",
                                               "guard.max_new_tokens=8", "log.report=false"])
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=2, progress=False)
    assert "guard/math/arith-v1/accuracy" not in metrics[0] and "guard/math/arith-v1/accuracy" in metrics[1]
    assert (tmp_path / "guard-baseline.json").is_file()
    assert envs.make("math/arith-v1")  # the env the guard read is still registered as it was


def test_answers_the_sandbox_failed_are_left_out_not_counted_as_drops(tmp_path, tiny):
    guard = Guard(GuardConfig(envs={"math/arith-v1": 10}, every=2), tmp_path)
    env, tasks = guard.envs["math/arith-v1"]
    guard.check(ScriptedClient(tiny.tokenizer, _answers(tasks, True)), 0)
    lost = {t.id for t in tasks[:6]}
    real = env.verify

    def verify(task, response):  # the sandbox fails six answers on every try
        if task.id in lost:
            from tempering.types import Score
            return Score(0.0, False, {"status": "sandbox_error"})
        return real(task, response)

    env.verify = verify
    m = guard.check(ScriptedClient(tiny.tokenizer, _answers(tasks, True)), 2)
    assert m["guard/math/arith-v1/accuracy"] == 1.0 and m["guard/math/arith-v1/drop"] == 0.0
    assert guard_message(m) is None and json.loads((tmp_path / "guard-baseline.json").read_text())["math/arith-v1"] \
        == [True] * 10
