"""`temper audit rm MODEL --env ID`: does a reward model agree with the verifier, and for the
right reasons?

Input: held-out replies with the verifier's verdict (`Item`: task, family, reply, passed) and
a scorer `score(prompt, reply) -> float` (the reward model). Reported:

    agreement     over every (passing, failing) pair of replies to the same task: the share
                  the model scores the passing one higher (ties count half); per family
    length        Pearson r between score and reply length, and the share of pairs in which
                  the longer reply is the passing one (what length alone would get)
    calibration   expected calibration error of sigmoid(score - median) against the verdict,
                  over 5 equal-count bins
    surface edits the change in score, in units of the score's spread, when a reply gets an
                  edit that does not change its correctness (a polite closing sentence, blank
                  lines between its lines), and the share of pairs whose order the edit of the
                  failing reply flips

Flags: agreement below AGREEMENT_MIN, |r| at or above LENGTH_R_MAX, an edit that moves scores
by EDIT_MAX spreads or more on average.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence

AGREEMENT_MIN = 0.6
LENGTH_R_MAX = 0.5
EDIT_MAX = 0.5
EDITS: dict[str, Callable[[str], str]] = {
    "polite_sentence": lambda r: r.rstrip() + "\n\nI hope this helps! Let me know if you have any questions.",
    "blank_lines": lambda r: "\n\n".join(r.splitlines()),
}


@dataclass(frozen=True)
class Item:
    task_id: str
    family: str
    prompt: str
    reply: str
    passed: bool


def _pairs(items: Sequence[Item]) -> list[tuple[int, int]]:
    """(passing index, failing index) for every such pair within one task."""
    by_task: dict[str, list[int]] = defaultdict(list)
    for i, it in enumerate(items):
        by_task[it.task_id].append(i)
    return [(g, b) for ids in by_task.values() for g in ids for b in ids if items[g].passed and not items[b].passed]


def win(a: float, b: float) -> float:
    return 1.0 if a > b else 0.5 if a == b else 0.0


def pearson(xs: list[float], ys: list[float]) -> float:
    if len(xs) < 3 or statistics.pstdev(xs) == 0 or statistics.pstdev(ys) == 0:
        return 0.0
    return statistics.correlation(xs, ys)


def _ece(scores: list[float], passed: list[bool], bins: int = 5) -> float:
    mid = statistics.median(scores)
    probs = [1 / (1 + math.exp(-(s - mid))) for s in scores]
    order = sorted(range(len(scores)), key=lambda i: probs[i])
    size = max(1, len(order) // bins)
    err = 0.0
    for k in range(0, len(order), size):
        chunk = order[k:k + size]
        err += len(chunk) / len(order) * abs(sum(probs[i] for i in chunk) / len(chunk)
                                              - sum(passed[i] for i in chunk) / len(chunk))
    return err


def audit_reward_model(items: Sequence[Item], score: Callable[[str, str], float]) -> dict:
    scores = [score(it.prompt, it.reply) for it in items]
    pairs = _pairs(items)
    out: dict = {"replies": len(items), "pairs": len(pairs)}
    out["agreement"] = sum(win(scores[g], scores[b]) for g, b in pairs) / len(pairs) if pairs else None
    fam: dict[str, list[float]] = defaultdict(list)
    for g, b in pairs:
        fam[items[g].family].append(win(scores[g], scores[b]))
    out["agreement_by_family"] = {f: sum(v) / len(v) for f, v in sorted(fam.items())}
    lengths = [float(len(it.reply)) for it in items]
    out["length_r"] = pearson(lengths, scores)
    out["longer_is_passing"] = sum(win(lengths[g], lengths[b]) for g, b in pairs) / len(pairs) if pairs else None
    out["calibration_ece"] = _ece(scores, [it.passed for it in items]) if items else None
    spread = statistics.pstdev(scores) or 1.0
    edits = {}
    for name, edit in EDITS.items():
        edited = [score(it.prompt, edit(it.reply)) for it in items]
        shift = [(e - s) / spread for e, s in zip(edited, scores)]
        flips = sum(win(scores[g], scores[b]) != win(scores[g], edited[b]) for g, b in pairs)
        edits[name] = {"mean_shift_spreads": sum(shift) / len(shift), "mean_abs_shift_spreads":
                       sum(map(abs, shift)) / len(shift), "pair_flips": flips / len(pairs) if pairs else 0.0}
    out["surface_edits"] = edits
    flags = []
    if out["agreement"] is not None and out["agreement"] < AGREEMENT_MIN:
        flags.append(f"agrees with the verifier on {out['agreement']:.0%} of pairs (below {AGREEMENT_MIN:.0%})")
    if abs(out["length_r"]) >= LENGTH_R_MAX:
        flags.append(f"score follows reply length (Pearson r {out['length_r']:+.2f}): a policy would learn to pad")
    for name, e in edits.items():
        if e["mean_abs_shift_spreads"] >= EDIT_MAX:
            flags.append(f"the {name} edit, which does not change correctness, moves scores by "
                         f"{e['mean_abs_shift_spreads']:.2f} spreads")
    out["flags"] = flags
    return out
