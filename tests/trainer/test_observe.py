"""Alerts, progress lines and the TensorBoard / W&B loggers, on real tiny-random runs."""

import glob
import io
import math
import struct

import pytest

from tempering.config import load_config
from tempering.config.schema import AlertConfig
from tempering.envs import SingleTurnEnv
from tempering.errors import ConfigError
from tempering.scheduler.store import Store
from tempering.trainer import prepare_run, train
from tempering.trainer.alerts import AlertWatch
from tempering.trainer.checkpoint import latest_checkpoint
from tempering.trainer.loggers import ProgressLines
from tempering.types import Message, Score, Task


def _cfg(**over):
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in over.items()])


def _env(verify) -> SingleTurnEnv:
    def generate(rng, family):
        return Task(id="", domain="test", prompt=(Message("user", f"Say something about {rng.randint(0, 10**9)}."),),
                    reference=None)
    return SingleTurnEnv("test/observe-v1", generate, verify, lambda t: "ok")


def _alerts(run_dir) -> list[dict]:
    store = Store(run_dir / "store.sqlite")
    try:
        return store.alerts()
    finally:
        store.close()


def test_a_planted_nan_reward_raises_nan_and_stops_the_run_with_a_checkpoint(tmp_path):
    cfg = _cfg(**{"train.stop_on": "[nan]", "log.report": "false"})
    prepare_run(cfg, tmp_path)
    env = _env(lambda task, response: Score(float("nan") if response.count("e") % 2 else 1.0, False))
    metrics = train(cfg, tmp_path, steps=4, progress=False, env=env)
    assert len(metrics) == 1  # stopped after the first step, not at the step budget
    assert [a["kind"] for a in _alerts(tmp_path)] == ["nan"]
    assert latest_checkpoint(tmp_path).name == "step-1"


def test_a_huge_learning_rate_blows_up_kl_and_stop_on_kl_stops(tmp_path, parity_env):
    cfg = _cfg(**{"optim.lr": 1.0, "algorithm.beta": 0.1, "train.stop_on": "[kl]", "log.report": "false"})
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=6, progress=False, env=parity_env)
    kinds = [a["kind"] for a in _alerts(tmp_path)]
    assert "kl" in kinds
    assert metrics[-1]["kl"] > cfg.alerts.kl_max and len(metrics) < 6
    assert latest_checkpoint(tmp_path).name == f"step-{len(metrics)}"


def test_a_reward_that_collapses_raises_reward_collapse_once(tmp_path):
    calls = {"n": 0}

    def verify(task, response):  # parity for the first two steps (8 attempts each), then never
        calls["n"] += 1
        ok = calls["n"] <= 16 and response.count("e") % 2 == 0
        return Score(float(ok), ok)

    cfg = _cfg(**{"alerts.collapse_steps": 2, "log.report": "false"})
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=6, progress=False, env=_env(verify))
    assert any(m["pass_rate"] > 0 for m in metrics[:2]) and all(m["pass_rate"] == 0 for m in metrics[2:])
    alerts = _alerts(tmp_path)
    assert [(a["kind"], a["step"]) for a in alerts] == [("reward_collapse", 4)]  # raised once, while it lasts


def test_a_healthy_run_raises_no_alert(tmp_path, parity_env):
    cfg = _cfg(**{"log.report": "false"})
    prepare_run(cfg, tmp_path)
    train(cfg, tmp_path, steps=3, progress=False, env=parity_env)
    assert _alerts(tmp_path) == []


@pytest.mark.parametrize("key,values,kind", [
    ("entropy", [2.0, 2.1, 1.9, 1.5, 0.3], "entropy_collapse"),
    ("response_len", [40, 42, 38, 60, 95], "length_drift"),
    ("response_len", [40, 42, 38, 30, 12], "length_drift"),
])
def test_entropy_and_length_checks_fire_past_their_threshold_only(key, values, kind):
    watch = AlertWatch(AlertConfig())
    raised = []
    for i, v in enumerate(values, 1):
        raised += watch.check([{"step": j + 1, key: x} for j, x in enumerate(values[:i])])
    assert [(a.kind, a.step) for a in raised] == [(kind, 5)]


@pytest.mark.parametrize("audit,fires", [
    ({"rm_audit/pairs": 20, "rm_audit/agreement": 0.55, "rm_audit/length_r": 0.1}, "orders 55% of 20"),
    ({"rm_audit/pairs": 4, "rm_audit/agreement": 0.0, "rm_audit/length_r": 0.1}, None),  # too few pairs to judge
    ({"rm_audit/pairs": 20, "rm_audit/agreement": 0.9, "rm_audit/length_r": 0.72}, "follows reply length"),
    ({"rm_audit/pairs": 20, "rm_audit/agreement": 0.9, "rm_audit/length_r": -0.2, "rm_audit/polite_shift": 0.8},
     "polite sentence"),
    ({"rm_audit/pairs": 20, "rm_audit/agreement": 0.6, "rm_audit/length_r": 0.49, "rm_audit/polite_shift": 0.49},
     None),  # every threshold met exactly
])
def test_reward_model_audit_alert(audit, fires):
    raised = AlertWatch(AlertConfig()).check([{"step": 10, **audit}])
    if fires is None:
        assert raised == []
    else:
        assert [a.kind for a in raised] == ["rm_audit"] and fires in raised[0].message


@pytest.mark.parametrize("shares,raised", [
    ([0.0, 0.1, 0.05], []),                # at most alerts.infra_share: quiet (0.1 exactly is the boundary)
    ([0.0, 0.25, 0.3, 0.0, 0.5], [2, 5]),  # past it: once per stretch of trouble, again after it cleared
])
def test_infra_alert_fires_when_the_sandbox_fails_more_than_its_share_of_attempts(shares, raised):
    watch, got = AlertWatch(AlertConfig()), []
    history = [{"step": i, "infra/share": s, "infra/failed": round(s * 16)} for i, s in enumerate(shares, 1)]
    for i in range(1, len(history) + 1):
        got += watch.check(history[:i])
    assert [(a.kind, a.step) for a in got] == [("infra", s) for s in raised]
    assert all("alerts.infra_share 0.1" in a.message for a in got)


def test_alert_thresholds_do_not_fire_on_the_boundary():
    history = [{"step": i, "kl": 1.0, "pass_rate": 0.0, "entropy": 1.0, "response_len": 10.0} for i in range(1, 6)]
    history[-1].update(entropy=0.2, response_len=20.0)  # exactly entropy_floor and length_ratio
    assert AlertWatch(AlertConfig()).check(history) == []  # and pass rate 0 throughout is not a collapse


def test_progress_lines_show_step_reward_informative_and_eta():
    out = io.StringIO()
    p = ProgressLines(total=10, start=0, max_minutes=0, out=out)
    p.log(1, {"reward_mean": 0.25, "pass_rate": 0.5, "groups_informative": 2, "groups_sampled": 6, "time_step": 3.0})
    line = out.getvalue().strip()
    assert line.startswith("step 1/10 reward 0.250 pass 0.50") and "informative 2/6" in line and "ETA" in line


def test_train_prints_one_line_per_step_when_not_a_terminal(tmp_path, capsys, parity_env):
    cfg = _cfg(**{"log.report": "false"})
    prepare_run(cfg, tmp_path)
    train(cfg, tmp_path, steps=2, env=parity_env)
    lines = [ln for ln in capsys.readouterr().out.splitlines() if ln.startswith("step ")]
    assert [ln.split()[1] for ln in lines] == ["1/2", "2/2"]


def _wandb_history_keys(path: str) -> set[str]:
    """Keys of the history records in a .wandb file (LevelDB log blocks of protobuf records)."""
    from wandb.proto import wandb_internal_pb2 as pb

    data, pos, buf, keys = open(path, "rb").read(), 7, b"", set()
    assert data[:4] == b":W&B"
    while pos + 7 <= len(data):
        left = 32768 - pos % 32768
        if left < 7:
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", data[pos:pos + 7])
        chunk, pos = data[pos + 7:pos + 7 + length], pos + 7 + length
        buf = chunk if kind in (1, 2) else buf + chunk
        if kind in (1, 4):
            record = pb.Record()
            record.ParseFromString(buf)
            if record.WhichOneof("record_type") == "history":
                keys |= {item.key or "/".join(item.nested_key) for item in record.history.item}
    return keys


def test_tensorboard_and_wandb_offline_get_every_scalar(tmp_path, parity_env):
    pytest.importorskip("tensorboard")
    pytest.importorskip("wandb")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = _cfg(**{"log.tensorboard": "true", "log.wandb": "offline", "log.report": "false"})
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=2, progress=False, env=parity_env)
    scalars = {k for m in metrics for k, v in m.items() if k != "step" and isinstance(v, (int, float))
               and not isinstance(v, bool) and math.isfinite(v)}
    acc = EventAccumulator(str(tmp_path / "tensorboard"), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    tags = set(acc.Tags()["scalars"])
    assert {f"tempering/{k}" for k in scalars} <= tags
    assert {"train/reward", "train/kl", "train/entropy", "train/completions/mean_length",
            "train/frac_reward_zero_std"} <= tags  # TRL's names
    assert {"actor/entropy", "actor/pg_clipfrac", "critic/score/mean", "response_length/mean"} <= tags  # verl's
    assert [e.step for e in acc.Scalars("tempering/reward_mean")] == [1, 2]
    assert acc.Scalars("tempering/reward_mean")[-1].value == pytest.approx(metrics[-1]["reward_mean"])
    assert {"rollout/reward", "rollout/advantage"} <= set(acc.Tags()["histograms"])
    runs = glob.glob(str(tmp_path / "wandb" / "offline-run-*" / "*.wandb"))
    assert len(runs) == 1
    keys = _wandb_history_keys(runs[0])
    assert {t for t in tags} <= keys  # the same names as TensorBoard's
    assert "rollout/samples/_type" in keys


def test_a_logger_without_its_package_is_one_clear_config_error(tmp_path, parity_env, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_wandb(name, *a, **k):
        if name == "wandb":
            raise ImportError("no wandb")
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", no_wandb)
    cfg = _cfg(**{"log.wandb": "offline", "log.report": "false"})
    prepare_run(cfg, tmp_path)
    with pytest.raises(ConfigError, match="pip install"):
        train(cfg, tmp_path, steps=1, progress=False, env=parity_env)


def test_unknown_stop_on_kind_is_refused():
    from tempering.trainer.validate import validate

    with pytest.raises(ConfigError, match="train.stop_on"):
        validate(_cfg(**{"train.stop_on": "[nans]"}))


def test_a_cpu_budget_stops_the_run_cleanly_and_cost_is_logged(tmp_path, parity_env):
    cfg = _cfg(**{"train.budget.cpu_hours": 0.0003, "train.budget.price_per_hour": 2.0, "log.report": "false"})
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=50, progress=False, env=parity_env)
    assert len(metrics) < 50  # about a second of CPU: far fewer than 50 steps of any machine
    assert [a["kind"] for a in _alerts(tmp_path)] == ["budget"]
    assert latest_checkpoint(tmp_path).name == f"step-{len(metrics)}"
    cpu = [m["cost/cpu_hours"] for m in metrics]
    assert cpu == sorted(cpu) and cpu[0] > 0
    assert metrics[-1]["cost/price"] == pytest.approx(2.0 * cpu[-1])
    assert metrics[-1]["cost/cpu_hours/test"] == pytest.approx(cpu[-1])  # one domain: all of it
