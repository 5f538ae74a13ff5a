"""What a run's store (store.sqlite) holds, read for the report: the most recent episodes with
their turns, prompts and advantages (the rollout viewer), and the sandbox runs found in the
execution records, with env-step latency per domain."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tempering.envs.infra import INFRA_STOP

TEXT_LIMIT = 3000
"""Characters kept of each reply, feedback and execution record in the viewer."""
MAX_EPISODES = 2000
"""Most recent episodes kept in the viewer."""
LIMIT_STATUSES = ("timeout", "memory", "output_limit", "killed", "sandbox_error")


def _cut(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= TEXT_LIMIT else text[:TEXT_LIMIT] + f"\n... [{len(text) - TEXT_LIMIT} more characters]"


def decoder(model: str | None):
    """ids -> text with the run's tokenizer, or None where it cannot be had (the viewer then
    shows no prompts). Presets share SmolLM2's tokenizer, read without building the model."""
    try:
        from transformers import AutoTokenizer

        from tempering.models import presets

        path = presets.tokenizer_path() if model in presets.PRESETS else Path(str(model))
        tok = AutoTokenizer.from_pretrained(path)
    except Exception:  # noqa: BLE001 - a report without prompts beats no report
        return None
    return lambda ids: tok.decode(ids, skip_special_tokens=False)


def rollout_data(db: sqlite3.Connection, decode=None) -> list[dict]:
    """The most recent MAX_EPISODES episodes with their turns, for the viewer; `decode` (ids ->
    text) gives each its prompt."""
    has_adv = bool(db.execute("SELECT 1 FROM sqlite_master WHERE name = 'advantages'").fetchone())
    adv_col = "a.advantage, a.reward" if has_adv else "NULL, NULL"
    adv_join = "LEFT JOIN advantages a ON a.step = e.step AND a.round = e.round AND a.slot = e.slot" if has_adv else ""
    rows = db.execute(
        f"SELECT e.step, e.round, e.slot, e.task_id, e.domain, e.family, e.reward, e.passed, e.turns, e.tokens, "
        f"e.stop_reason, e.wall_s, {adv_col}, e.prompt_ids FROM episodes e {adv_join} "
        "ORDER BY e.step DESC, e.round DESC, e.slot DESC LIMIT ?", (MAX_EPISODES,)).fetchall()
    rows.reverse()
    turns: dict[tuple, dict[int, dict]] = {}
    low = rows[0][0] if rows else 0
    for step, rnd, slot, turn, reward, status, env_s in db.execute(
            "SELECT step, round, slot, turn, reward, status, env_s FROM turns WHERE step >= ?", (low,)):
        turns.setdefault((step, rnd, slot), {})[turn] = {"reward": reward, "status": status, "env_s": env_s}
    for step, rnd, slot, turn, name, content in db.execute(
            "SELECT step, round, slot, turn, name, content FROM artifacts WHERE step >= ?", (low,)):
        turns.setdefault((step, rnd, slot), {}).setdefault(turn, {})[name] = _cut(content)
    out = []
    for r in rows:
        key = tuple(r[:3])
        out.append({"step": r[0], "round": r[1], "slot": r[2], "task": r[3], "domain": r[4], "family": r[5] or "",
                    "reward": r[6], "passed": bool(r[7]), "turns": r[8], "tokens": r[9], "stop": r[10],
                    "wall_s": r[11], "advantage": r[12], "trained_reward": r[13],
                    "prompt": _cut(decode([int(x) for x in r[14].split(",") if x])) if decode and r[14] else "",
                    "transcript": [t for _, t in sorted(turns.get(key, {}).items())]})
    return out


def _percentile(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def _sandbox_runs(node, out: list[tuple[str, float]]) -> None:
    """Every execution record (a dict with sandbox_status) nested in an env's info."""
    if isinstance(node, dict):
        if "sandbox_status" in node:
            out.append((str(node["sandbox_status"]), float(node.get("wall_s") or 0.0)))
        for v in node.values():
            _sandbox_runs(v, out)
    elif isinstance(node, list):
        for v in node:
            _sandbox_runs(v, out)


def sandbox_stats(db: sqlite3.Connection) -> dict:
    """Sandbox runs found in the execution records, and env-step latency per domain."""
    runs: list[tuple[str, float]] = []
    for (content,) in db.execute("SELECT content FROM artifacts WHERE name = 'info'"):
        try:
            _sandbox_runs(json.loads(content), runs)
        except ValueError:
            continue
    statuses: dict[str, int] = {}
    for status, _ in runs:
        statuses[status] = statuses.get(status, 0) + 1
    walls = [w for _, w in runs]
    env = {}
    for domain, in db.execute("SELECT DISTINCT domain FROM episodes"):
        xs = [s for (s,) in db.execute("SELECT t.env_s FROM turns t JOIN episodes e ON e.step = t.step AND "
                                      "e.round = t.round AND e.slot = t.slot WHERE e.domain = ?", (domain,))]
        env[domain] = {"steps": len(xs), "p50_s": _percentile(xs, 0.5), "p95_s": _percentile(xs, 0.95)}
    infra = db.execute("SELECT COUNT(*) FROM episodes WHERE stop_reason = ?", (INFRA_STOP,)).fetchone()[0]
    return {"runs": len(runs), "statuses": statuses, "limit_hits": sum(statuses.get(s, 0) for s in LIMIT_STATUSES),
            "p50_s": _percentile(walls, 0.5), "p95_s": _percentile(walls, 0.95), "env_steps": env, "infra_failed": infra}
