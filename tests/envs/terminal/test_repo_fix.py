"""repo_fix: the hand-typed fix of a repository task reads the lines it then replaces."""

from __future__ import annotations

import re

import pytest

from tempering.envs.terminal import repo_fix

ORIGINAL = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n" for i in range(6)) + \
    "def g(xs):\n" + "".join(f"    a{i} = {i}\n" for i in range(40)) + "    return [x for x in xs if x < a3]\n"


def _window(mutated: str, command: str) -> str:
    """What the sed command prints: `a,bp` by line numbers, or `/def name(/,+Np` by name."""
    lines = mutated.splitlines(True)
    by_name = re.search(r"sed -n '/(def \w+\()/,\+(\d+)p'", command)
    if by_name:
        start = next(i for i, line in enumerate(lines) if by_name.group(1) in line)
        return "".join(lines[start : start + int(by_name.group(2)) + 1])
    low, high = map(int, re.search(r"sed -n '(\d+),(\d+)p'", command).groups())
    return "".join(lines[low - 1 : high])


@pytest.mark.parametrize(("old", "new"), [
    ("x < a3]", "x <= a3]"),            # one line deep in a long function
    ("y = x + 2\n", "y = x - 2\n"),     # a short function: the window stays inside it
    ("    a5 = 5\n", ""),               # a dropped line
])
def test_the_patch_restores_the_original_and_only_replaces_lines_that_were_read(old, new):
    mutated = ORIGINAL.replace(old, new, 1)
    bad, good, first, last = repo_fix.patch_block(mutated, ORIGINAL)
    assert mutated.replace(bad, good, 1) == ORIGINAL and mutated.count(bad) == 1
    command = repo_fix.read_command(mutated, ORIGINAL, "pkg/__init__.py")
    window = _window(mutated, command)
    assert bad in window
    if new.startswith("y = x - 2"):  # read by the function's name, from its def line
        assert command == "cd /app && sed -n '/def f2(/,+30p' pkg/__init__.py\n" and window.startswith("def f2(")
    if old == "x < a3]":  # a block further down than READ lines: by line numbers, around the block
        assert re.search(r"sed -n '\d+,\d+p'", command)
        assert len(window.splitlines()) <= (last - first + 1) + repo_fix.BEFORE + repo_fix.AFTER


def test_a_name_that_is_not_unique_is_read_by_line_numbers():
    original = "class A:\n    def run(self, x):\n        return x\n\n\nclass B:\n    def run(self, x):\n" + \
        "".join(f"        a{i} = {i}\n" for i in range(20)) + "        return x + 1\n"  # `/def run(/` finds A.run first
    mutated = original.replace("x + 1", "x - 1")
    command = repo_fix.read_command(mutated, original, "p.py")
    window = _window(mutated, command)
    assert re.search(r"sed -n '\d+,\d+p'", command) and "return x - 1" in window
    assert len(window.splitlines()) <= 1 + repo_fix.BEFORE + repo_fix.AFTER


def test_a_block_that_repeats_everywhere_has_no_patch():
    same = "x = 1\n" * 30
    dropped = "x = 1\n" * 29  # a line gone from the middle: every widened block occurs many times
    assert repo_fix.patch_block(dropped, same) is None
    assert repo_fix.patch_command(dropped, same, "p.py") is None
