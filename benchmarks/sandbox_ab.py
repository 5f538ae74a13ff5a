"""The sandbox, side by side: this checkout's against an earlier revision's (`--old REV`),
in alternating rounds on the same machine, so a change to the fork server or the run
path shows as a ratio of medians rather than as two numbers from different days.

Each round starts a fresh process per side (the revision's own package on sys.path, its
own fork server), warms the pool up, then times `--n` serial runs of a trivial Python
snippet (latency) and `--runs` runs at concurrency 8 (throughput).

    .venv/bin/python benchmarks/sandbox_ab.py --old 97b9dfc --repeats 5 --n 200 --runs 500
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import REPO, parser

WORKER = r'''
import json, sys, time
from concurrent.futures import ThreadPoolExecutor
from tempering.sandbox import Sandbox
n, runs = int(sys.argv[1]), int(sys.argv[2])
with Sandbox(pool_size=8) as sb:
    for _ in range(20):
        assert sb.run("print(1)").ok
    lat = []
    for _ in range(n):
        t = time.perf_counter()
        r = sb.run("print(sum(range(10)))")
        lat.append(time.perf_counter() - t)
        assert r.stdout == "45\n", r
    t = time.perf_counter()
    with ThreadPoolExecutor(8) as pool:
        out = list(pool.map(lambda i: sb.run(f"print({i})").stdout, range(runs)))
    wall = time.perf_counter() - t
    assert out == [f"{i}\n" for i in range(runs)]
lat.sort()
print(json.dumps({"p50_ms": 1000 * lat[len(lat) // 2], "p95_ms": 1000 * lat[int(len(lat) * 0.95)],
                  "runs_per_s": runs / wall}))
'''


def side(package_root: Path, n: int, runs: int) -> dict:
    env_path = str(package_root)
    out = subprocess.run([sys.executable, "-c", f"import sys; sys.path.insert(0, {env_path!r})\n" + WORKER,
                          str(n), str(runs)], capture_output=True, text=True, check=True, cwd="/")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = parser(__doc__, repeats=5, n=(200, "serial runs per round (latency)"))
    ap.add_argument("--runs", type=int, default=500, help="runs per round at concurrency 8 (throughput)")
    ap.add_argument("--old", required=True, help="git revision whose sandbox to compare against")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old_root = Path(tmp) / "old"
        old_root.mkdir()
        archive = subprocess.run(["git", "archive", args.old, "tempering"], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old_root)], input=archive.stdout, check=True)
        rows = {"old": [], "new": []}
        for i in range(args.repeats):
            for name, root in (("old", old_root), ("new", REPO)) if i % 2 == 0 else (("new", REPO), ("old", old_root)):
                rows[name].append(side(root, args.n, args.runs))
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("p50_ms", "p95_ms", "runs_per_s")} for k, v in rows.items()}
    print(f"{args.repeats} alternating rounds; medians over rounds")
    print("| side | p50 ms | p95 ms | runs/s at concurrency 8 |")
    print("|---|---|---|---|")
    for k, label in (("old", args.old), ("new", "this checkout")):
        print(f"| {label} | {med[k]['p50_ms']:.2f} | {med[k]['p95_ms']:.2f} | {med[k]['runs_per_s']:.0f} |")
    print(f"new / old: p50 {med['new']['p50_ms'] / med['old']['p50_ms']:.2f}x, "
          f"throughput {med['new']['runs_per_s'] / med['old']['runs_per_s']:.2f}x")


if __name__ == "__main__":
    main()
