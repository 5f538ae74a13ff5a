"""The run's state store: every episode, turn, artifact and step metric in SQLite (WAL).

    runs       one row per run: name, algorithm, env, model, config
    episodes   one row per finished attempt, keyed (run, step, round, slot); its tokens,
               loss mask and reward, so a resumed run can train on it without regenerating
    turns      per turn: reward, status, env seconds
    artifacts  per turn: the model's reply (each code version), the env's feedback, the
               env's record (execution logs) as JSON
    tasks      per task: attempts and passes (pass-rate tracking for the curriculum)
    metrics    one row per step
    advantages per trained attempt: the reward it trained on (after reward-model mixing or
               the shuffled control) and its advantage (the mean over its tokens for GAE)
    alerts     every alert a run raised: step, kind, message
    incidents  every sandbox run of an attempt that hit a limit, was killed or failed as a
               sandbox (sandbox/audit.py): its status, detail, language, seconds

An episode is written in its own transaction the moment it ends. The key makes a second
write of the same attempt a no-op, so a run killed at any point and resumed loses no
finished episode (the resumed step reads it back instead of sampling it again) and stores
none twice. WAL lets `temper runs show` read while a run writes.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from tempering.envs.infra import INFRA_STOP
from tempering.types import Segment

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    name TEXT PRIMARY KEY, created REAL, algorithm TEXT, env TEXT, model TEXT, config TEXT);
CREATE TABLE IF NOT EXISTS episodes (
    step INTEGER, round INTEGER, slot INTEGER,
    task_id TEXT, domain TEXT, family TEXT,
    reward REAL, passed INTEGER, turns INTEGER, tokens INTEGER, truncated INTEGER,
    stop_reason TEXT, env_s REAL, wall_s REAL, created REAL,
    prompt_ids TEXT, sequence TEXT, mask TEXT, logprobs TEXT, segments TEXT,
    PRIMARY KEY (step, round, slot));
CREATE TABLE IF NOT EXISTS turns (
    step INTEGER, round INTEGER, slot INTEGER, turn INTEGER,
    reward REAL, status TEXT, env_s REAL,
    PRIMARY KEY (step, round, slot, turn));
CREATE TABLE IF NOT EXISTS artifacts (
    step INTEGER, round INTEGER, slot INTEGER, turn INTEGER, name TEXT, content TEXT,
    PRIMARY KEY (step, round, slot, turn, name));
CREATE TABLE IF NOT EXISTS tasks (
    task_id TEXT PRIMARY KEY, domain TEXT, family TEXT, attempts INTEGER, passes INTEGER);
CREATE TABLE IF NOT EXISTS metrics (step INTEGER PRIMARY KEY, data TEXT);
CREATE TABLE IF NOT EXISTS advantages (
    step INTEGER, round INTEGER, slot INTEGER, trained_step INTEGER, reward REAL, advantage REAL,
    PRIMARY KEY (step, round, slot));
CREATE TABLE IF NOT EXISTS incidents (
    step INTEGER, round INTEGER, slot INTEGER, n INTEGER, status TEXT, detail TEXT, language TEXT, wall_s REAL,
    PRIMARY KEY (step, round, slot, n));
CREATE TABLE IF NOT EXISTS alerts (step INTEGER, kind TEXT, message TEXT, created REAL, PRIMARY KEY (step, kind));
"""

STORE_FILE = "store.sqlite"


@dataclass(frozen=True, kw_only=True)
class EpisodeRecord:
    """One finished attempt as the trainer needs it back. Built by keyword only: 19 fields
    in a row are too easy to shift by one."""

    step: int
    round: int
    slot: int
    task_id: str
    domain: str
    family: str | None
    reward: float
    passed: bool
    turns: int
    truncated: bool
    stop_reason: str
    env_s: float
    prompt_ids: tuple[int, ...]
    sequence: tuple[int, ...]
    """Every token after the prompt (replies, feedback, template tokens)."""
    mask: tuple[int, ...]
    """1 on the tokens the model generated."""
    wall_s: float = 0.0
    logprobs: tuple[float, ...] = ()
    """Sampling log-probs of `sequence`'s tokens (0 where mask is 0): the behaviour policy,
    for importance ratios when training off-policy."""
    turn_records: tuple[dict, ...] = ()
    """Per turn: reward, status, env_s and the artifacts (reply, feedback, info)."""
    segments: tuple[Segment, ...] = ()
    """Later stretches of a long episode, each on its own compressed prompt (Trajectory.segments)."""
    infra_retries: int = 0
    """Verifications or env steps run again because their sandbox failed (not stored: 0 when read back)."""

    @property
    def infra_failed(self) -> bool:
        """The sandbox failed on every try (envs/infra.py): the attempt has no real reward. Kept as
        its stop_reason, so a resumed run reads it back."""
        return self.stop_reason == INFRA_STOP


@dataclass(frozen=True)
class Rollout:
    """One attempt as loggers and the report show it: the last reply, not the tokens."""

    step: int
    round: int
    slot: int
    task_id: str
    domain: str
    family: str | None
    reward: float
    passed: bool
    turns: int
    stop_reason: str
    advantage: float | None
    """None where no update trained on it (an uninformative group that was dropped)."""
    reply: str
    info: dict | None = None
    """The last turn's record from the env (verifier details), where it left one."""


class Store:
    """One run's store (runs/<name>/store.sqlite). Safe to open from several processes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")  # durable across a process crash (kill -9)
        self.db.executescript(SCHEMA)
        if "segments" not in {row[1] for row in self.db.execute("PRAGMA table_info(episodes)")}:
            self.db.execute("ALTER TABLE episodes ADD COLUMN segments TEXT")  # a store from before long episodes
        self.lock = threading.RLock()  # one connection, used by the trainer and a background sampler

    def close(self) -> None:
        self.db.close()

    # -- writing -----------------------------------------------------------------------------
    def register_run(self, name: str, algorithm: str, env: str, model: str, config: dict) -> None:
        self.db.execute("INSERT OR IGNORE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
                        (name, time.time(), algorithm, env, model, json.dumps(config)))

    def add_episode(self, ep: EpisodeRecord) -> bool:
        """Store one finished attempt in one transaction; False if it was already there."""
        with self.lock, self._tx() as db:
            cur = db.execute(
                "INSERT OR IGNORE INTO episodes VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (ep.step, ep.round, ep.slot, ep.task_id, ep.domain, ep.family, ep.reward, int(ep.passed), ep.turns,
                 sum(ep.mask), int(ep.truncated), ep.stop_reason, ep.env_s, ep.wall_s, time.time(),
                 _ints(ep.prompt_ids), _ints(ep.sequence), _ints(ep.mask), ",".join(map(repr, ep.logprobs)),
                 json.dumps([seg.as_dict() for seg in ep.segments]) if ep.segments else None))
            if cur.rowcount == 0:
                return False
            key = (ep.step, ep.round, ep.slot)
            for i, t in enumerate(ep.turn_records):
                db.execute("INSERT INTO turns VALUES (?,?,?,?,?,?,?)", (*key, i, t.get("reward", 0.0), t.get("status"),
                                                                        t.get("env_s", 0.0)))
                for name in ("reply", "feedback", "info"):
                    if t.get(name):
                        content = t[name] if isinstance(t[name], str) else json.dumps(t[name], default=str)
                        db.execute("INSERT INTO artifacts VALUES (?,?,?,?,?,?)", (*key, i, name, content))
            db.execute("INSERT INTO tasks VALUES (?, ?, ?, 1, ?) ON CONFLICT(task_id) DO UPDATE SET "
                       "attempts = attempts + 1, passes = passes + excluded.passes",
                       (ep.task_id, ep.domain, ep.family, int(ep.passed)))
        return True

    def add_metrics(self, step: int, metrics: dict) -> None:
        with self.lock:
            self.db.execute("INSERT OR REPLACE INTO metrics VALUES (?, ?)", (step, json.dumps(metrics)))

    def add_advantages(self, trained_step: int, rows: Iterable[tuple[tuple[int, int, int], float, float]]) -> None:
        """((step, round, slot), trained reward, advantage) of each attempt an update trained on."""
        with self.lock, self._tx() as db:
            db.executemany("INSERT OR REPLACE INTO advantages VALUES (?,?,?,?,?,?)",
                           [(*key, trained_step, reward, adv) for key, reward, adv in rows])

    def add_incidents(self, key: tuple[int, int, int], incidents) -> None:
        """The sandbox incidents of one attempt (a resumed run's second write is a no-op)."""
        with self.lock, self._tx() as db:
            db.executemany("INSERT OR IGNORE INTO incidents VALUES (?,?,?,?,?,?,?,?)",
                           [(*key, n, i.status, i.detail, i.language, i.wall_s) for n, i in enumerate(incidents)])

    def incidents(self) -> list[dict]:
        """Every incident with its attempt's task, oldest first."""
        rows = self.db.execute(
            "SELECT i.step, i.round, i.slot, e.task_id, e.domain, i.status, i.detail, i.language, i.wall_s "
            "FROM incidents i LEFT JOIN episodes e ON e.step = i.step AND e.round = i.round AND e.slot = i.slot "
            "ORDER BY i.step, i.round, i.slot, i.n").fetchall()
        return [dict(zip(("step", "round", "slot", "task_id", "domain", "status", "detail", "language", "wall_s"), r))
                for r in rows]

    def add_alert(self, step: int, kind: str, message: str) -> bool:
        """Record an alert; False if this kind was already raised at this step (a resumed run)."""
        with self.lock:
            cur = self.db.execute("INSERT OR IGNORE INTO alerts VALUES (?, ?, ?, ?)", (step, kind, message, time.time()))
        return cur.rowcount > 0

    def alerts(self) -> list[dict]:
        return [dict(zip(("step", "kind", "message"), r))
                for r in self.db.execute("SELECT step, kind, message FROM alerts ORDER BY step, kind")]

    def _tx(self):
        return _Transaction(self.db)

    # -- reading -----------------------------------------------------------------------------
    def episodes(self, step: int | None = None, round: int | None = None) -> list[EpisodeRecord]:
        where, args = _where(step=step, round=round)
        with self.lock:
            rows = self.db.execute(
                "SELECT step, round, slot, task_id, domain, family, reward, passed, turns, truncated, stop_reason, env_s, "
                f"prompt_ids, sequence, mask, wall_s, logprobs, segments FROM episodes {where} ORDER BY step, round, slot",
                args).fetchall()
        return [EpisodeRecord(step=r[0], round=r[1], slot=r[2], task_id=r[3], domain=r[4], family=r[5], reward=r[6],
                              passed=bool(r[7]), turns=r[8], truncated=bool(r[9]), stop_reason=r[10], env_s=r[11],
                              prompt_ids=_tuple(r[12]), sequence=_tuple(r[13]), mask=_tuple(r[14]), wall_s=r[15],
                              logprobs=tuple(float(x) for x in r[16].split(",")) if r[16] else (),
                              segments=tuple(Segment.from_dict(d) for d in json.loads(r[17])) if r[17] else ())
                for r in rows]

    def rollouts(self, step: int | None = None, limit: int | None = None) -> list[Rollout]:
        """Attempts (of one step, or all) with their advantage and last reply, oldest first."""
        where, args = _where(step=step)
        where = where.replace("step", "e.step")
        rows = self.db.execute(
            "SELECT e.step, e.round, e.slot, e.task_id, e.domain, e.family, e.reward, e.passed, e.turns, e.stop_reason, "
            "a.advantage, (SELECT content FROM artifacts r WHERE r.step = e.step AND r.round = e.round AND r.slot = e.slot "
            "AND r.name = 'reply' ORDER BY r.turn DESC LIMIT 1), (SELECT content FROM artifacts r WHERE r.step = e.step "
            "AND r.round = e.round AND r.slot = e.slot AND r.name = 'info' ORDER BY r.turn DESC LIMIT 1) "
            "FROM episodes e LEFT JOIN advantages a "
            f"ON a.step = e.step AND a.round = e.round AND a.slot = e.slot {where} ORDER BY e.step, e.round, e.slot"
            + (" LIMIT ?" if limit else ""), args + ([limit] if limit else [])).fetchall()
        return [Rollout(*r[:7], bool(r[7]), *r[8:11], r[11] or "", _json_or_none(r[12])) for r in rows]

    def domain_tokens(self, step: int) -> dict[str, int]:
        """Generated tokens per domain in one step (what its compute is apportioned by)."""
        return dict(self.db.execute("SELECT domain, SUM(tokens) FROM episodes WHERE step = ? GROUP BY domain",
                                    (step,)).fetchall())

    def keys(self) -> set[tuple[int, int, int]]:
        return set(self.db.execute("SELECT step, round, slot FROM episodes").fetchall())

    def artifacts(self, step: int, round: int, slot: int) -> list[tuple[int, str, str]]:
        """(turn, name, content) of one episode, in order: each code version and its log."""
        return self.db.execute("SELECT turn, name, content FROM artifacts WHERE step=? AND round=? AND slot=? "
                               "ORDER BY turn, name", (step, round, slot)).fetchall()

    def task_rates(self) -> dict[str, tuple[int, int]]:
        """task_id -> (attempts, passes)."""
        return {t: (a, p) for t, a, p in self.db.execute("SELECT task_id, attempts, passes FROM tasks")}

    def metrics(self) -> list[dict]:
        return [json.loads(d) for (d,) in self.db.execute("SELECT data FROM metrics ORDER BY step")]

    def summary(self, slowest: int = 5) -> dict[str, Any]:
        """What `temper runs show` prints: per-domain and per-family pass rates, the slowest
        episodes, why attempts were cut, and the last step's metrics."""
        q = self.db.execute
        run = q("SELECT name, algorithm, env, model, created FROM runs LIMIT 1").fetchone()
        count, passed, tokens = q("SELECT COUNT(*), COALESCE(SUM(passed), 0), COALESCE(SUM(tokens), 0) "
                                  "FROM episodes").fetchone()
        return {
            "run": dict(zip(("name", "algorithm", "env", "model", "created"), run)) if run else {},
            "episodes": count, "passed": passed, "tokens": tokens,
            "steps": q("SELECT COUNT(*) FROM metrics").fetchone()[0],
            "domains": [dict(zip(("domain", "episodes", "pass_rate", "reward_mean"), r)) for r in q(
                "SELECT domain, COUNT(*), AVG(passed), AVG(reward) FROM episodes GROUP BY domain ORDER BY domain")],
            "families": [dict(zip(("family", "episodes", "pass_rate"), r)) for r in q(
                "SELECT COALESCE(family, '-'), COUNT(*), AVG(passed) FROM episodes GROUP BY family ORDER BY family")],
            "stop_reasons": dict(q("SELECT stop_reason, COUNT(*) FROM episodes GROUP BY stop_reason "
                                   "ORDER BY COUNT(*) DESC").fetchall()),
            "slowest": [dict(zip(("step", "round", "slot", "task_id", "wall_s", "env_s", "turns", "tokens", "stop_reason"),
                                 r)) for r in q(
                "SELECT step, round, slot, task_id, wall_s, env_s, turns, tokens, stop_reason FROM episodes "
                "ORDER BY wall_s DESC, env_s DESC LIMIT ?", (slowest,))],
            "mixed_tasks": q("SELECT COUNT(*) FROM tasks WHERE passes > 0 AND passes < attempts").fetchone()[0],
            "tasks": q("SELECT COUNT(*) FROM tasks").fetchone()[0],
            "last_metrics": (self.metrics() or [{}])[-1],
            "alerts": self.alerts(),
        }


class _Transaction:
    def __init__(self, db: sqlite3.Connection) -> None:
        self.db = db

    def __enter__(self) -> sqlite3.Connection:
        self.db.execute("BEGIN IMMEDIATE")
        return self.db

    def __exit__(self, exc_type, *_) -> None:
        self.db.execute("ROLLBACK" if exc_type else "COMMIT")


def _json_or_none(text: str | None) -> dict | None:
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _where(**conds) -> tuple[str, list]:
    parts = [(f"{k} = ?", v) for k, v in conds.items() if v is not None]
    return ("WHERE " + " AND ".join(p for p, _ in parts) if parts else ""), [v for _, v in parts]


def _ints(xs: Iterable[int]) -> str:
    return ",".join(map(str, xs))


def _tuple(s: str) -> tuple[int, ...]:
    return tuple(int(x) for x in s.split(",")) if s else ()


def list_runs(root: Path) -> list[dict[str, Any]]:
    """One line per run directory under `root` that has a store."""
    out = []
    for path in sorted(Path(root).glob(f"*/{STORE_FILE}")):
        store = Store(path)
        try:
            s = store.summary(slowest=0)
        finally:
            store.close()
        last = s["last_metrics"]
        out.append({"dir": str(path.parent), **s["run"], "steps": s["steps"], "episodes": s["episodes"],
                    "pass_rate": s["passed"] / s["episodes"] if s["episodes"] else 0.0,
                    "reward_mean": last.get("reward_mean")})
    return out
