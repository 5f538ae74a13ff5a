"""What every benchmark shares: the repository on sys.path (so `python benchmarks/X.py`
runs from a checkout), no hub at run time, and one argument parser whose common flags
(--model, --n, --repeats, --out, ...) mean the same thing in every benchmark.

    from _common import parser
    ap = parser(__doc__, model="smollm2-135m-instruct", n=200, out="runs/bench-x.json")
    ap.add_argument("--only-here", ...)   # a benchmark's own flags as usual
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

COMMON: dict[str, tuple[type, str]] = {
    "model": (str, "a preset (smollm2-135m-instruct, tiny-random) or a Hugging Face model directory"),
    "n": (int, "held-out tasks evaluated"),
    "repeats": (int, "times each measurement is repeated; medians are reported"),
    "minutes": (float, "training time budget per run"),
    "turns": (int, "attempts per episode (feedback between them)"),
    "max_new_tokens": (int, "new tokens per reply"),
    "tokens": (int, "new tokens per sample"),
    "prompts": (int, "prompts per step"),
    "group": (int, "samples per prompt"),
    "device": (str, "auto, cpu or cuda"),
    "out": (str, "where the results are written"),
}


def parser(doc: str | None, **defaults) -> argparse.ArgumentParser:
    """An ArgumentParser described by the benchmark's docstring, with each named common
    flag added at the given default; a (default, help) pair gives the flag its own help."""
    ap = argparse.ArgumentParser(description=(doc or "").strip() or None,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    for name, default in defaults.items():
        if name not in COMMON:
            raise KeyError(f"{name!r} is not a common benchmark flag ({', '.join(COMMON)}); add it with add_argument")
        kind, help_ = COMMON[name]
        if isinstance(default, tuple):
            default, help_ = default
        ap.add_argument("--" + name.replace("_", "-"), type=kind, default=default, help=f"{help_} (default: %(default)s)")
    return ap
