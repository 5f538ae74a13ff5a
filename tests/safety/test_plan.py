"""temper plan: the checklist flags what is risky; the estimate spends budgets as the trainer does."""

import json

from tempering.cli.main import main
from tempering.config import load_config
from tempering.safety.plan import Probe, checklist, estimate


def _cfg(*sets):
    return load_config("configs/tiny-cpu.yaml", list(sets))


def _risks(items) -> dict[str, str]:
    return {i.section: i.risk for i in items if i.risk}


def test_a_safe_config_has_no_risk_and_every_section(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    items = checklist(_cfg("train.max_minutes=10"), {"math/arith-v1": True})
    assert {i.section for i in items} == {"compute", "domains", "sandbox", "algorithm", "evaluation", "security"}
    assert _risks(items) == {}


def test_each_risky_setting_is_flagged(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    cfg = _cfg("algorithm.beta=0", "eval.n=0", "reward.model=some-rm", "reward.model_weight=0.5",
               "train.steps=100000")
    risks = _risks(checklist(cfg, {"math/arith-v1": False}))
    assert "no KL leash and no held-out evaluation" in risks["evaluation"]
    assert "check_env" in risks["domains"]
    assert "without an audit" in risks["reward"]
    assert "network" in risks["security"]
    assert "budget" in risks["compute"]


def test_estimate_stops_before_the_step_that_would_pass_the_time_budget():
    probe = Probe(load_s=30.0, step_s=[150.0, 100.0, 100.0], eval_task_s=0.5, peak_rss_mb=3000.0,
                  tokens_per_step=5000.0, cpu_s_per_step=180.0)
    est = estimate(_cfg("train.steps=1000", "train.max_minutes=24", "eval.n=200"), probe)
    assert est["steps"] == 14 and est["budget_bound"]  # 1440 s // 100 s: the 15th would end past 24 min
    assert est["total_s"] == 30.0 + 1400.0 + 2 * 200 * 0.5
    assert est["tokens"] == 14 * 5000.0 and est["cpu_hours"] == 14 * 180.0 / 3600
    short = estimate(_cfg("train.steps=3", "train.max_minutes=24", "train.budget.price_per_hour=2"), probe)
    assert short["steps"] == 3 and not short["budget_bound"] and short["cost"] == 2 * short["cpu_hours"]


def test_plan_cli_probes_a_tiny_run(capsys):
    assert main(["plan", "configs/tiny-cpu.yaml", "--probe-steps", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["probe"]["step_s"][0] > 0 and out["probe"]["tokens_per_step"] > 0
    assert out["estimate"]["steps"] == 2 and out["probe"]["verified_envs"] == {"math/arith-v1": True}
