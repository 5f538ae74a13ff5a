"""Multi-domain GRPO end to end with the tiny model: math, code repair, finance, SQL and CAD
mixed in one step, each domain's episodes played against its own verifier and reported."""

from __future__ import annotations

from tempering.config import load_config
from tempering.scheduler.store import STORE_FILE, Store
from tempering.trainer import prepare_run, train

DOMAINS = ("math/arith-v1", "code/repair-v1", "finance/statements-v1", "sql/sqlite-v1", "cad/parts-v1")


def test_a_grpo_step_mixes_five_domains_and_reports_each(tmp_path, shared_sandbox):
    cfg = load_config("configs/smollm2-domains-grpo.yaml", [
        "model.name=tiny-random", "rollout.group_size=2", "rollout.max_new_tokens=8", "rollout.max_turns=2",
        "train.steps=1", "env.options={cad/parts-v1: {difficulty: 1}, sql/sqlite-v1: {difficulty: 1}, "
        "finance/statements-v1: {difficulty: 1}}"])
    prepare_run(cfg, tmp_path)
    (m,) = train(cfg, tmp_path, steps=1, progress=False)
    store = Store(tmp_path / STORE_FILE)
    episodes = store.episodes()
    store.close()
    by_domain = {d: [e for e in episodes if e.task_id.startswith(d + "/")] for d in DOMAINS}
    assert all(len(eps) == 2 for eps in by_domain.values()), {d: len(e) for d, e in by_domain.items()}
    # single-turn math ends after one reply; a random model's wrong replies in the others get
    # their verdict back and a second try
    assert {e.turns for e in by_domain["math/arith-v1"]} == {1}
    assert all(e.turns == 2 for d in DOMAINS[1:] for e in by_domain[d])
    for d in DOMAINS:
        assert m[f"share/{d}"] == 0.2 and f"reward/{d}" in m and f"pass_rate/{d}" in m
