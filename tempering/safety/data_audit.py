"""`temper audit data FILE`: what is wrong with a training file before a model learns it.

    duplicates       rows whose text is identical after normalising case and whitespace
    near-duplicates  pairs whose word 5-gram sets overlap by Jaccard >= NEAR (MinHash with
                     banding finds the candidates; each is confirmed by its exact Jaccard)
    overlap          rows whose prompt is a held-out prompt (the caller passes an env's test
                     and unseen prompts), exactly or after normalising
    balance          preference pairs: how often the chosen reply is the longer one (a reward
                     model trained on a skew learns length); rows with a reward or label: its spread
    length outliers  rows outside Tukey's fences (quartiles -/+ 3 x IQR) of the text length
    coverage         rows per env, per kind and per family, where the rows say which

Rows are read as the trainers read them: SFT rows (`messages`, or `prompt`/`completion`) and
preference pairs (`prompt`, `chosen`, `rejected`). The audit only reads; the CLI exits 1 when
it finds a duplicate share above `max_duplicate_share` or any overlap, so a pipeline can gate on it.
"""

from __future__ import annotations

import hashlib
import json
import re
import statistics
from collections import Counter, defaultdict
from dataclasses import dataclass, field

import numpy as np

from tempering.errors import ConfigError

NEAR = 0.9
"""Jaccard of word 5-gram sets at which two rows count as near-duplicates."""
SHINGLE = 5
PERMUTATIONS, BANDS = 64, 16  # 16 bands of 4: a pair at Jaccard 0.9 is a candidate with p > 0.999


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def row_text(row: dict) -> tuple[str, str]:
    """(prompt, whole text) of one row of any trainer format."""
    if "messages" in row:
        msgs = row["messages"]
        prompt = next((m["content"] for m in msgs if m.get("role") == "user"), "")
        return prompt, "\n".join(m.get("content", "") for m in msgs)
    prompt = row.get("prompt", "")
    if isinstance(prompt, list):
        prompt = "\n".join(m.get("content", "") for m in prompt if m.get("role") == "user")
    rest = [row.get(k, "") for k in ("completion", "chosen", "rejected", "response")]
    return prompt, "\n".join([prompt, *(r if isinstance(r, str) else json.dumps(r) for r in rest)])


def check_rows(rows: list[dict]) -> None:
    """One clear error for a row no trainer reads (the file itself is read by trainer.data.read_rows)."""
    for i, row in enumerate(rows, 1):
        if not ({"messages"} <= row.keys() or "prompt" in row):
            raise ConfigError(f"row {i}: a row needs `messages`, or `prompt` with `completion` or `chosen`/`rejected`")


def _shingles(text: str) -> set[str]:
    words = _norm(text).split()
    return {" ".join(words[i:i + SHINGLE]) for i in range(max(1, len(words) - SHINGLE + 1))}


def _minhash(shingles: set[str]) -> tuple[int, ...]:
    """PERMUTATIONS minima of (a * h + b) mod 2^64 over the shingles' 64-bit hashes."""
    h = np.array([int.from_bytes(hashlib.blake2b(s.encode(), digest_size=8).digest(), "little") for s in shingles],
                 dtype=np.uint64)
    with np.errstate(over="ignore"):
        return tuple((_A[:, None] * h[None, :] + _B[:, None]).min(axis=1).tolist())


_rng = np.random.default_rng(0)
_A = _rng.integers(1, 2**63, PERMUTATIONS, dtype=np.uint64) * np.uint64(2) + np.uint64(1)  # odd multipliers
_B = _rng.integers(0, 2**63, PERMUTATIONS, dtype=np.uint64)


def near_duplicates(texts: list[str], threshold: float = NEAR) -> list[tuple[int, int, float]]:
    """(i, j, jaccard) for every pair at or above `threshold` (exact duplicates included)."""
    sets = [_shingles(t) for t in texts]
    rows = PERMUTATIONS // BANDS
    buckets: dict[tuple, list[int]] = defaultdict(list)
    for i, s in enumerate(sets):
        sig = _minhash(s)
        for b in range(BANDS):
            buckets[(b, *sig[b * rows:(b + 1) * rows])].append(i)
    candidates = {(a, b) for ids in buckets.values() for k, a in enumerate(ids) for b in ids[k + 1:]}
    out = []
    for a, b in sorted(candidates):
        j = len(sets[a] & sets[b]) / max(1, len(sets[a] | sets[b]))
        if j >= threshold:
            out.append((a, b, j))
    return out


@dataclass
class DataAudit:
    rows: int
    duplicates: list[list[int]] = field(default_factory=list)
    """Groups of row numbers (0-based) with the same normalised text."""
    near_duplicates: list[tuple[int, int, float]] = field(default_factory=list)
    overlap: list[dict] = field(default_factory=list)
    """Rows whose prompt is a held-out prompt: row, how (exact or normalised), the held-out id."""
    held_out_checked: int = 0
    balance: dict = field(default_factory=dict)
    length: dict = field(default_factory=dict)
    coverage: dict = field(default_factory=dict)

    @property
    def duplicate_share(self) -> float:
        return sum(len(g) - 1 for g in self.duplicates) / max(self.rows, 1)

    def as_dict(self) -> dict:
        return {"rows": self.rows, "duplicate_rows": sum(len(g) - 1 for g in self.duplicates),
                "duplicate_share": self.duplicate_share, "duplicates": self.duplicates[:20],
                "near_duplicate_pairs": len(self.near_duplicates),
                "near_duplicates": [[a, b, round(j, 3)] for a, b, j in self.near_duplicates[:20]],
                "overlap": self.overlap[:50], "overlap_rows": len(self.overlap),
                "held_out_checked": self.held_out_checked, "balance": self.balance, "length": self.length,
                "coverage": self.coverage}


def audit_rows(rows: list[dict], held_out: dict[str, str] | None = None) -> DataAudit:
    """Audit rows against `held_out` (held-out task id -> its prompt)."""
    prompts, texts = zip(*(row_text(r) for r in rows)) if rows else ((), ())
    report = DataAudit(rows=len(rows))
    by_text: dict[str, list[int]] = defaultdict(list)
    for i, t in enumerate(texts):
        by_text[_norm(t)].append(i)
    report.duplicates = [ids for ids in by_text.values() if len(ids) > 1]
    dup_pairs = {(g[0], j) for g in report.duplicates for j in g[1:]}
    report.near_duplicates = [(a, b, j) for a, b, j in near_duplicates(list(texts)) if (a, b) not in dup_pairs and j < 1.0]
    held_out = held_out or {}
    exact = {p: tid for tid, p in held_out.items()}
    normal = {_norm(p): tid for tid, p in held_out.items()}
    report.held_out_checked = len(held_out)
    for i, p in enumerate(prompts):
        if p in exact:
            report.overlap.append({"row": i, "how": "exact", "held_out": exact[p]})
        elif _norm(p) in normal:
            report.overlap.append({"row": i, "how": "normalised", "held_out": normal[_norm(p)]})
    report.balance = _balance(rows)
    report.length = _length(list(texts))
    report.coverage = {key: dict(Counter(str(r[key]) for r in rows if key in r).most_common())
                       for key in ("env", "kind", "family", "domain") if any(key in r for r in rows)}
    return report


def _balance(rows: list[dict]) -> dict:
    pairs = [(r["chosen"], r["rejected"]) for r in rows if "chosen" in r and "rejected" in r]
    out: dict = {}
    if pairs:
        longer = sum(len(str(c)) > len(str(r)) for c, r in pairs)
        out["pairs"] = len(pairs)
        out["chosen_longer_share"] = longer / len(pairs)
    for key in ("reward", "passed", "label"):
        values = [r[key] for r in rows if key in r]
        if values:
            out[key] = dict(Counter(map(str, values)).most_common(10))
    return out


def _length(texts: list[str]) -> dict:
    lengths = [len(t) for t in texts]
    if len(lengths) < 4:
        return {"chars_median": statistics.median(lengths) if lengths else 0, "outliers": []}
    q1, _, q3 = statistics.quantiles(lengths, n=4)
    low, high = q1 - 3 * (q3 - q1), q3 + 3 * (q3 - q1)
    outliers = [i for i, n in enumerate(lengths) if n < low or n > high]
    return {"chars_median": statistics.median(lengths), "chars_q1": q1, "chars_q3": q3, "fence_low": low,
            "fence_high": high, "outliers": outliers[:50], "outlier_rows": len(outliers)}
