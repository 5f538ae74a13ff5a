"""The run report: one offline HTML file, its data, its size bound, hostile model text kept inert."""

import json
import re
import shutil

from tempering.config import load_config
from tempering.envs.fake import parity_env
from tempering.eval.report import MAX_EPISODES, TEXT_LIMIT, build_report, write_report
from tempering.scheduler.store import EpisodeRecord, Store
from tempering.trainer import prepare_run, train

HOSTILE = '</script><script>window.PWNED = 1</script><img src=x onerror="window.PWNED = 2">'


def _episode(step: int, slot: int, reply: str, reward: float = 1.0) -> EpisodeRecord:
    return EpisodeRecord(step=step, round=0, slot=slot, task_id=f"code/x-v1/train/{slot}", domain="code", family="f",
                         reward=reward, passed=reward == 1.0, turns=1, truncated=False, stop_reason="terminated",
                         env_s=0.01, prompt_ids=(1, 2), sequence=(3, 4), mask=(1, 1), wall_s=0.5,
                         turn_records=({"reward": reward, "status": "failed", "env_s": 0.01, "reply": reply,
                                        "feedback": "AssertionError: expected 3",
                                        "info": {"sandbox_status": "timeout" if slot % 2 else "ok", "wall_s": 0.2}},))


def _store(tmp_path, episodes: int, reply: str = "print(1)") -> Store:
    store = Store(tmp_path / "store.sqlite")
    store.register_run("r", "grpo", "code/x-v1", "tiny-random", {})
    for i in range(episodes):
        store.add_episode(_episode(1 + i // 8, i % 8, reply, reward=float(i % 2)))
    for step in range(1, episodes // 8 + 1):
        store.add_metrics(step, {"step": step, "reward_mean": 0.5, "pass_rate": 0.5, "kl": 0.01 * step,
                                 "time_generate": 1.0, "time_score": 0.2, "time_update": 0.5})
    store.add_advantages(1, [((1, 0, 0), 0.0, -0.87), ((1, 0, 1), 1.0, 0.87)])
    store.add_alert(2, "kl", "KL to the reference is 2, above alerts.kl_max 1")
    return store


def _episodes_json(page: str) -> list[dict]:
    block = re.search(r'<script type="application/json" id="episodes">(.*?)</script>', page, re.S).group(1)
    return json.loads(block)


def test_report_is_self_contained_and_holds_the_runs_data(tmp_path):
    _store(tmp_path, 16).close()
    page = write_report(tmp_path).read_text()
    assert not re.search(r'<(script|link|img|iframe)[^>]+(src|href)\s*=\s*["\']?(https?:)?//', page)  # nothing to fetch
    assert "plotly-graph-div" in page and "Plotly.newPlot" in page
    eps = _episodes_json(page)
    assert len(eps) == 16
    first = eps[0]
    assert (first["step"], first["slot"], first["advantage"], first["trained_reward"]) == (1, 0, -0.87, 0.0)
    assert first["transcript"][0]["reply"] == "print(1)" and "AssertionError" in first["transcript"][0]["feedback"]
    assert eps[5]["advantage"] is None  # no update trained on it
    assert "step 2: kl" in page  # the alert banner
    assert "timeout 8" in page and "limit hits" in page  # sandbox statistics from the execution records


def test_model_text_cannot_close_the_data_script_or_inject_markup(tmp_path):
    _store(tmp_path, 8, reply=HOSTILE).close()
    page = build_report(tmp_path)
    block = re.search(r'<script type="application/json" id="episodes">(.*?)</script>', page, re.S).group(1)
    assert "</" not in block  # the data element ends only where the report ends it
    assert "PWNED" not in page.replace(block, "")  # and the model's text is nowhere else
    assert _episodes_json(page)[0]["transcript"][0]["reply"] == HOSTILE  # intact as data
    assert "innerHTML" not in page.split("<script>")[-1]  # the viewer writes text, never markup


def test_a_thousand_long_episodes_stay_under_20_mb(tmp_path):
    _store(tmp_path, 1000, reply="x = 1\n" * 5000).close()  # 30,000 characters per reply
    out = write_report(tmp_path)
    assert out.stat().st_size < 20e6
    eps = _episodes_json(out.read_text())
    assert len(eps) == min(1000, MAX_EPISODES)
    assert len(eps[0]["transcript"][0]["reply"]) < TEXT_LIMIT + 100 and "more characters" in eps[0]["transcript"][0]["reply"]


def test_a_tiny_run_writes_its_report_and_the_copy_opens_elsewhere(tmp_path):
    cfg = load_config("configs/tiny-cpu.yaml", [])
    run = tmp_path / "run"
    prepare_run(cfg, run)
    train(cfg, run, steps=2, progress=False, env=parity_env())
    page = (run / "report.html").read_text()
    eps = _episodes_json(page)
    assert len(eps) == 16 and {e["step"] for e in eps} == {1, 2}
    assert all(e["advantage"] is not None for e in eps)  # drop_zero_variance is off: every group trained
    moved = tmp_path / "elsewhere" / "copy.html"
    moved.parent.mkdir()
    shutil.copy(run / "report.html", moved)
    assert moved.read_text() == page  # no relative paths: the file is the whole report


def test_report_cli_writes_on_demand_and_names_a_missing_run(tmp_path, capsys):
    from tempering.cli.main import main

    _store(tmp_path, 8).close()
    assert main(["report", str(tmp_path), "--out", str(tmp_path / "r.html")]) == 0
    assert (tmp_path / "r.html").stat().st_size > 1e6
    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "has no store.sqlite" in capsys.readouterr().err
