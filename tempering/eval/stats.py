"""Paired comparisons of two evaluations of one model-free task list: exact McNemar."""

from __future__ import annotations

from math import comb


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for b right->wrong and c wrong->right pairs: the
    binomial test of min(b, c) among b + c discordant pairs at p = 1/2."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(comb(n, i) for i in range(min(b, c) + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def paired(before: list[bool], after: list[bool]) -> dict:
    """Flips between two evaluations of the same tasks, in the same order, and McNemar's p."""
    if len(before) != len(after):
        raise ValueError(f"paired evaluations need the same tasks: {len(before)} vs {len(after)}")
    up = sum(not b and a for b, a in zip(before, after))
    down = sum(b and not a for b, a in zip(before, after))
    return {"wrong_to_right": up, "right_to_wrong": down, "p": mcnemar_exact(down, up)}
