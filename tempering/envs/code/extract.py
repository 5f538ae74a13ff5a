"""Turning a model's reply into a Python module to test."""

from __future__ import annotations

import re

_FENCE = re.compile(r"```[ \t]*(?:python|py|python3)?[ \t]*\n(.*?)(?:```|\Z)", re.S | re.I)


def extract_code(reply: str, prompt: str, entry_point: str) -> str:
    """The code to test: the fenced block that defines `entry_point` (else the last fenced
    block, else the whole reply). A reply that does not define the function is taken as the
    body that continues `prompt`, the way HumanEval completions are."""
    blocks = [b for b in _FENCE.findall(reply) if b.strip()]
    defining = [b for b in blocks if re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", b, re.M)]
    code = defining[-1] if defining else (blocks[-1] if blocks else reply)
    if not re.search(rf"^\s*def\s+{re.escape(entry_point)}\s*\(", code, re.M):
        code = prompt + code
    elif prompt and not code.lstrip().startswith(("import", "from")):
        # keep the prompt's imports (e.g. `from typing import List`) the reply may rely on
        imports = "".join(line + "\n" for line in prompt.splitlines() if line.startswith(("import ", "from ")))
        code = imports + code
    return code
