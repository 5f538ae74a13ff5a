"""GRPO on terminal/repo-v1 end to end with the tiny model: shell episodes in the sandbox,
graded by the repository's tests, stored and trained on."""

from __future__ import annotations

from tempering.config import load_config
from tempering.scheduler.store import STORE_FILE, Store
from tempering.trainer import prepare_run, train


def test_a_grpo_step_on_repository_tasks_runs_end_to_end(tmp_path, shared_sandbox):
    cfg = load_config("configs/tiny-cpu.yaml", [
        "env.id=terminal/repo-v1", "rollout.max_turns=2", "rollout.prompts_per_step=1", "rollout.group_size=2",
        "rollout.max_new_tokens=12", "rollout.max_rounds_per_step=1", "rollout.pipeline=overlap"])
    prepare_run(cfg, tmp_path)
    (m,) = train(cfg, tmp_path, steps=1, progress=False)
    store = Store(tmp_path / STORE_FILE)
    episodes = store.episodes()
    turns = {e.slot: store.artifacts(e.step, e.round, e.slot) for e in episodes}
    store.close()
    assert len(episodes) == 2 and all(e.task_id.startswith("terminal/repo-v1/train/") for e in episodes)
    # the env ended each attempt at its turn limit (= rollout.max_turns) and graded it; a
    # random model's replies fix nothing
    assert {(e.stop_reason, e.turns, e.reward) for e in episodes} == {("env", 2, 0.0)}
    info = [c for rows in turns.values() for t, name, c in rows if name == "info" and t == 1]
    assert len(info) == 2 and all('"FAIL_TO_PASS"' in c or "fail_to_pass" in c.lower() for c in info)
    assert m["time_score"] > 0 and m["turns_mean"] == 2.0
