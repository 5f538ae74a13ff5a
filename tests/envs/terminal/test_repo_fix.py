"""repo_fix: the hand-typed fix of a repository task reads the lines it then replaces."""

from __future__ import annotations

import re

import pytest

from tempering.envs.terminal import repo_fix

ORIGINAL = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n" for i in range(6)) + \
    "def g(xs):\n" + "".join(f"    a{i} = {i}\n" for i in range(20)) + "    return [x for x in xs if x < a3]\n"


def _window(mutated: str, command: str) -> str:
    low, high = map(int, re.search(r"sed -n '(\d+),(\d+)p'", command).groups())
    return "".join(mutated.splitlines(True)[low - 1 : high])


@pytest.mark.parametrize(("old", "new"), [
    ("x < a3]", "x <= a3]"),            # one line deep in a long function
    ("y = x + 2\n", "y = x - 2\n"),     # a short function: the window stays inside it
    ("    a5 = 5\n", ""),               # a dropped line
])
def test_the_patch_restores_the_original_and_only_replaces_lines_that_were_read(old, new):
    mutated = ORIGINAL.replace(old, new, 1)
    bad, good, first, last = repo_fix.patch_block(mutated, ORIGINAL)
    assert mutated.replace(bad, good, 1) == ORIGINAL and mutated.count(bad) == 1
    window = _window(mutated, repo_fix.read_command(mutated, ORIGINAL, "pkg/__init__.py"))
    assert bad in window
    assert len(window.splitlines()) <= (last - first + 1) + repo_fix.BEFORE + repo_fix.AFTER
    if new.startswith("y = x - 2"):
        assert window.startswith("def f2(") and "def f3(" not in window


def test_a_block_that_repeats_everywhere_has_no_patch():
    same = "x = 1\n" * 30
    dropped = "x = 1\n" * 29  # a line gone from the middle: every widened block occurs many times
    assert repo_fix.patch_block(dropped, same) is None
    assert repo_fix.patch_command(dropped, same, "p.py") is None
