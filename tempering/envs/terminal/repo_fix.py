"""How a person fixes a generated repository task's bug by hand, for demonstrations: read the
function it is in, by name, then replace the changed block in place (a few lines of Python,
not the file).

    repo_fix.read_command(mutated, original, "wrapkit/__init__.py")    # sed -n '/def fill(/,+30p' ...
    repo_fix.patch_command(mutated, original, "wrapkit/__init__.py")   # python3 - <<'EOF' ...

Every line the patch replaces is inside what the read command prints, so a fix in a
demonstration only uses code the model has just seen.
"""

from __future__ import annotations

import ast

BEFORE, AFTER = 8, 6
"""Lines read before and after the changed block (within its function), where it is read by line number."""
READ = 30
"""Lines read after a function's `def` line: the read a model can learn, since the function's
name, unlike its line numbers, is something the failing test and the task point to."""
WIDEN = 6
"""Most lines a changed block widens by on each side to be unique in the file."""


def patch_block(mutated: str, original: str) -> tuple[str, str, int, int] | None:
    """The smallest block of changed lines that occurs once in `mutated`: its text before and
    after the fix, and its first and last line (1-based) in `mutated`. None when there is none."""
    old, new = mutated.splitlines(True), original.splitlines(True)
    start = 0
    while start < min(len(old), len(new)) and old[start] == new[start]:
        start += 1
    end = 0
    while end < min(len(old), len(new)) - start and old[-1 - end] == new[-1 - end]:
        end += 1
    for extra in range(WIDEN):
        a, b = max(0, start - extra), max(end - extra, 0)
        bad = "".join(old[a:len(old) - b])
        if bad and mutated.count(bad) == 1:
            return bad, "".join(new[a:len(new) - b]), a + 1, len(old) - b
    return None


def read_command(mutated: str, original: str, path: str) -> str:
    """`sed -n` from the bug's function's `def` line (found by name) to READ lines on. By line
    numbers, from up to BEFORE lines before the changed block to up to AFTER after it, where
    the name is not unique in the file or the block is not within those READ lines (a long
    function: reading it whole would fill the output). Either way it prints the whole block
    `patch_command` replaces."""
    block = patch_block(mutated, original)
    first, last = (block[2], block[3]) if block else (1, len(mutated.splitlines()))
    holders = [n for n in ast.walk(ast.parse(mutated)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
               and n.lineno <= first <= (n.end_lineno or n.lineno)]
    fn = max(holders, key=lambda n: n.lineno, default=None)
    if fn is not None and fn.lineno <= first and last <= fn.lineno + READ and mutated.count(f"def {fn.name}(") == 1:
        return f"cd /app && sed -n '/def {fn.name}(/,+{READ}p' {path}\n"
    low = min(first, max(fn.lineno if fn else 1, first - BEFORE))
    high = max(last, min((fn.end_lineno or last) if fn else last + AFTER, last + AFTER))
    return f"cd /app && sed -n '{low},{high}p' {path}\n"


def patch_command(mutated: str, original: str, path: str) -> str | None:
    """A python3 heredoc that replaces the changed block in place, once; None without a block."""
    block = patch_block(mutated, original)
    if block is None:
        return None
    bad, good = block[:2]
    return (f"python3 - <<'EOF'\nfrom pathlib import Path\np = Path({'/app/' + path!r})\n"
            f"p.write_text(p.read_text().replace({bad!r}, {good!r}, 1))\nEOF\n")
