"""Sandbox latency and throughput, side by side in one run.

    python benchmarks/sandbox.py [--n 200] [--runs 1000] [--load 10000] [--out docs/benchmarks.md]

See tempering/sandbox/bench.py for what is measured.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tempering.sandbox.bench import report  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="latency samples per path")
    ap.add_argument("--runs", type=int, default=1000, help="runs per throughput level")
    ap.add_argument("--load", type=int, default=10_000, help="runs in the load check at concurrency 16 (0: skip)")
    ap.add_argument("--out", default=None, help="append the table to this Markdown file")
    args = ap.parse_args()
    text = report(args.n, args.runs, load=args.load)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text + "\n")


if __name__ == "__main__":
    main()
