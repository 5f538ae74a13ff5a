"""Sandbox latency and throughput, side by side in one run.

    python benchmarks/sandbox.py [--n 200] [--runs 1000] [--load 10000] [--out docs/benchmarks.md]

See tempering/sandbox/bench.py for what is measured.
"""

from __future__ import annotations


from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering.sandbox.bench import report  # noqa: E402


def main() -> None:
    ap = parser(__doc__, n=(200, "latency samples per path"), out=(None, "append the table to this Markdown file"))
    ap.add_argument("--runs", type=int, default=1000, help="runs per throughput level")
    ap.add_argument("--load", type=int, default=10_000, help="runs in the load check at concurrency 16 (0: skip)")
    args = ap.parse_args()
    text = report(args.n, args.runs, load=args.load)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text + "\n")


if __name__ == "__main__":
    main()
