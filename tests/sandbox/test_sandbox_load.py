"""Many runs at once: nothing lost, nothing duplicated, nothing left behind."""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tempering.sandbox import Limits


def _rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _load(make_sandbox, runs: int, concurrency: int) -> None:
    box = make_sandbox(Limits(wall_s=60, cpu_s=60, memory_mb=128), pool_size=4)
    server_pid = box._proc.pid
    warm = [box.run(f"print({i})") for i in range(20)]
    assert all(r.ok for r in warm)
    rss_before = _rss_mb()

    def one(i: int) -> tuple[int, str, str]:
        r = box.run(f"print({i})")
        return i, r.status, r.stdout

    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(one, range(runs)))
    rss_after = _rss_mb()
    box.close()

    failed = [(i, s) for i, s, _ in results if s != "ok"]
    outputs = [out for _, s, out in results if s == "ok"]
    assert failed == []
    assert sorted(int(o) for o in outputs) == list(range(runs))  # none lost, none duplicated
    assert all(out == f"{i}\n" for i, _, out in results)  # and each went to its own caller
    assert rss_after - rss_before < 64, f"caller grew {rss_after - rss_before:.0f} MB over {runs} runs"
    # the server is gone, with every slot and every cgroup it made
    assert not Path(f"/proc/{server_pid}").exists()
    left = subprocess.run(["pgrep", "-u", "65534"], capture_output=True, text=True).stdout.split()
    mine = [p for p in left if Path(f"/proc/{p}/status").exists()
            and f"PPid:\t{server_pid}" in Path(f"/proc/{p}/status").read_text()]
    assert mine == []
    assert list(Path("/sys/fs/cgroup").glob(f"*/**/tempering-{server_pid}")) == []


def test_1000_runs_at_concurrency_16(make_sandbox):
    _load(make_sandbox, 1000, 16)


@pytest.mark.slow
def test_10000_runs_at_concurrency_16(make_sandbox):
    _load(make_sandbox, 10_000, 16)
