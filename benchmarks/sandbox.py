"""Sandbox latency and throughput, side by side in one run.

    python benchmarks/sandbox.py [--n 200] [--runs 2000] [--out docs/benchmarks.md]

Latency: a trivial Python snippet run serially through Tempering's sandbox (full
isolation), through a bare `python3 -c` subprocess (no isolation), and through
`bwrap --unshare-all python3 -c` (if bubblewrap is installed). Throughput: runs/s of the
same snippet through Tempering at concurrency 1, 2, 8, 32. Rows alternate between the
contenders so machine noise hits all of them alike.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tempering.sandbox import Sandbox  # noqa: E402

SNIPPET = "print(sum(range(10)))"
PY = "/usr/bin/python3"


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def bare() -> None:
    subprocess.run([PY, "-c", SNIPPET], check=True, capture_output=True)


def bwrap() -> None:
    subprocess.run(
        ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
         "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
         "--tmpfs", "/tmp", PY, "-c", SNIPPET],
        check=True, capture_output=True,
    )


def latency(sb: Sandbox, n: int) -> dict[str, list[float]]:
    def temper() -> None:
        r = sb.run(SNIPPET)
        assert r.ok and r.stdout == "45\n", r

    contenders = {"tempering": temper, "python3 -c": bare}
    if shutil.which("bwrap"):
        contenders["bwrap + python3"] = bwrap
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(n):
        for name, fn in contenders.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1000)
    return times


def throughput(sb: Sandbox, concurrency: int, runs: int) -> tuple[float, int]:
    def one(_: int) -> str:
        return sb.run(SNIPPET).status

    t = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        statuses = list(pool.map(one, range(runs)))
    rate = runs / (time.perf_counter() - t)
    return rate, sum(s != "ok" for s in statuses)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="latency samples per contender")
    ap.add_argument("--runs", type=int, default=1000, help="runs per throughput level")
    ap.add_argument("--out", default=None, help="append the table to this Markdown file")
    args = ap.parse_args()
    with Sandbox(pool_size=8) as sb:
        for _ in range(20):
            sb.run(SNIPPET)  # warm the pool
        lat = latency(sb, args.n)
        rows = []
        base = statistics.median(lat["tempering"])
        for name, xs in lat.items():
            med = statistics.median(xs)
            rows.append(f"| {name} | {med:.2f} | {pct(xs, 95):.2f} | {med / base:.1f}x |")
        thr = [(c, *throughput(sb, c, args.runs)) for c in (1, 2, 8, 32)]
    lines = [
        f"Trivial Python snippet (`{SNIPPET}`), {args.n} serial runs each, interleaved; "
        f"{os.cpu_count()} CPUs.",
        "",
        "| path | p50 ms | p95 ms | p50 vs tempering |",
        "|---|---|---|---|",
        *rows,
        "",
        f"Throughput through Tempering, {args.runs} runs per level:",
        "",
        "| concurrency | runs/s | failed runs |",
        "|---|---|---|",
        *[f"| {c} | {rate:.0f} | {bad} |" for c, rate, bad in thr],
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write("\n" + text + "\n")


if __name__ == "__main__":
    main()
