"""Sandbox latency and throughput, side by side in one run (used by `temper sandbox bench`
and benchmarks/sandbox.py).

Latency: a trivial Python snippet run serially through Tempering's sandbox (full
isolation), through a bare `python3 -c` subprocess (no isolation at all), and through
`bwrap --unshare-all ... python3 -c` when bubblewrap is installed. Rows alternate between
contenders so machine noise hits them alike. Throughput: runs/s of the same snippet at
several concurrency levels, counting lost, duplicated and failed results.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from .client import Sandbox

SNIPPET = "print(sum(range(10)))"
PY = "/usr/bin/python3"


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def _bare() -> None:
    subprocess.run([PY, "-c", SNIPPET], check=True, capture_output=True)


def _bwrap() -> None:
    subprocess.run(
        ["bwrap", "--unshare-all", "--die-with-parent", "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
         "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin", "--proc", "/proc", "--dev", "/dev",
         "--tmpfs", "/tmp", PY, "-c", SNIPPET],
        check=True, capture_output=True,
    )


def latency(sb: Sandbox, n: int, compare: bool = True) -> dict[str, list[float]]:
    """Milliseconds per run, per contender."""

    def temper() -> None:
        r = sb.run(SNIPPET)
        if not (r.ok and r.stdout == "45\n"):
            raise RuntimeError(f"sandboxed run failed: {r}")

    contenders = {"tempering sandbox": temper}
    if compare:
        contenders["python3 -c (no isolation)"] = _bare
        if shutil.which("bwrap"):
            contenders["bwrap --unshare-all + python3"] = _bwrap
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(n):
        for name, fn in contenders.items():
            t = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t) * 1000)
    return times


def throughput(sb: Sandbox, concurrency: int, runs: int) -> dict:
    """Runs `runs` snippets that each print their own index; checks every result came
    back exactly once and intact."""

    def one(i: int) -> tuple[int, str, str]:
        r = sb.run(f"print({i})")
        return i, r.status, r.stdout

    t = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, range(runs)))
    elapsed = time.perf_counter() - t
    seen = [int(out) for _, status, out in results if status == "ok" and out.strip().isdigit()]
    return {
        "concurrency": concurrency,
        "runs": runs,
        "runs_per_s": runs / elapsed,
        "failed": sum(status != "ok" for _, status, _ in results),
        "lost": len(set(range(runs)) - set(seen)),
        "duplicated": len(seen) - len(set(seen)),
        "wrong": sum(status == "ok" and out != f"{i}\n" for i, status, out in results),
    }


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _leftovers(server_pid: int) -> tuple[int, int]:
    """(processes still parented by the server, cgroup directories it made) after close."""
    procs = 0
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == server_pid:
                        procs += 1
            except (OSError, ValueError, IndexError):
                pass
    groups = 0
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        groups += sum(d == f"tempering-{server_pid}" for d in dirs)
    return procs, groups


def report(n: int = 200, runs: int = 1000, levels=(1, 2, 8, 32), compare: bool = True, pool_size: int = 8,
           load: int = 0) -> str:
    with Sandbox(pool_size=pool_size) as sb:
        for _ in range(20):
            sb.run(SNIPPET)  # warm the pool
        lat = latency(sb, n, compare)
        thr = [throughput(sb, c, runs) for c in levels]
        if load:
            rss0 = _rss_mb()
            big = throughput(sb, 16, load)
            rss1 = _rss_mb()
        server = sb._proc.pid
    left = _leftovers(server) if load else (0, 0)
    base = statistics.median(lat["tempering sandbox"])
    lines = [
        f"Trivial Python snippet (`{SNIPPET}`), {n} serial runs per path, interleaved; {os.cpu_count()} CPUs.",
        "",
        "| path | p50 ms | p95 ms | p50 / tempering p50 |",
        "|---|---|---|---|",
    ]
    for name, xs in lat.items():
        med = statistics.median(xs)
        lines.append(f"| {name} | {med:.2f} | {_pct(xs, 95):.2f} | {med / base:.1f}x |")
    lines += [
        "",
        f"Throughput through the Tempering sandbox ({runs} runs per level, pool of {pool_size} ready slots):",
        "",
        "| concurrency | runs/s | failed | lost | duplicated | wrong output |",
        "|---|---|---|---|---|---|",
    ]
    for t in thr:
        lines.append(f"| {t['concurrency']} | {t['runs_per_s']:.0f} | {t['failed']} | {t['lost']} | "
                     f"{t['duplicated']} | {t['wrong']} |")
    if load:
        lines += [
            "",
            f"Load: {load} runs at concurrency 16: {big['runs_per_s']:.0f} runs/s, {big['failed']} failed, "
            f"{big['lost']} lost, {big['duplicated']} duplicated, {big['wrong']} with another run's output; "
            f"caller RSS {rss0:.0f} -> {rss1:.0f} MB; after close: {left[0]} processes and {left[1]} cgroup "
            "directories left.",
        ]
    return "\n".join(lines)
