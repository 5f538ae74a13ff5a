"""check_env over every registered env: the reference answer scores full marks, an empty
answer zero, a broken variant less than full marks, and seeds reproduce (DESIGN.md)."""

from __future__ import annotations

import pytest

from tempering import envs

SANDBOXED = ("cad/", "code/", "sql/", "terminal/")
"""Domains whose verifiers run answers in the sandbox: skipped where it cannot start."""

N = 2
"""Tasks per split: under a second for most envs."""

N_REASONING = 1
"""reasoning-gym's generators are many (about a hundred ids) and alike in how they plug in:
one task per split each keeps the whole sweep affordable."""

SLOW = {f"reasoning/{name}-v1": 1 for name in ("futoshiki", "knight_swap", "sokoban", "spell_backward", "zebra_puzzles",
                                                "intermediate_integration", "sudoku", "puzzle24", "countdown",
                                                "quantum_lock")} | {"terminal/repo-v1": 1,
                                                                     "code/repo-function-v1": 1}
"""Envs that take a second or more per task (a generator whose held-out task takes ~10 draws
to land in its split; a repository's test suite run per answer): one task per split."""

KNOWN_BROKEN = {"reasoning/codeio-v1": pytest.mark.xfail(strict=False, reason=(
    "reasoning_gym's codeio generator is not reproducible (the same seed can give a different task, "
    "depending on what ran before in the process) and json.dumps a numpy int64 for some seeds"))}
"""Found by this test; fixing them is an issue of its own, not a skip."""


@pytest.mark.parametrize("env_id", [pytest.param(e, marks=KNOWN_BROKEN.get(e, ())) for e in envs.list()])
def test_check_env(env_id, request):
    if env_id.startswith(SANDBOXED):
        request.getfixturevalue("shared_sandbox")
    report = envs.check_env(env_id, n=SLOW.get(env_id, N_REASONING if env_id.startswith("reasoning/") else N))
    assert report.ok, report.problems
    assert report.checked > 0
