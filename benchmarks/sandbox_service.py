"""The sandbox service under load over loopback, beside the in-process client, in one run.

    python benchmarks/sandbox_service.py [--runs 10000] [--concurrency 64] [--replicas 2] [--workers 4]
                                         [--kill] [--out runs/bench-sandbox-service.json]

Contenders, in this order, each on the same `--runs` programs at the same concurrency:
- in-process: `Sandbox(pool_size=replicas x workers)`, what the trainer uses by default;
- pool: `SandboxPool` over `--replicas` local `temper sandbox serve` replicas (native API);
- run_code: SandboxFusion's `/run_code` JSON posted to one replica with httpx (the shape
  verl's sandbox_fusion reward sends).
Each run squares its own number read from stdin, so a lost, duplicated or wrong result is
seen: every answer is checked against its request. `--kill` SIGKILLs the first replica
halfway through the pool's load and counts what the client was told.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from _common import parser  # noqa: E402 - also puts the repository on sys.path

import httpx  # noqa: E402

from tempering.sandbox import Sandbox  # noqa: E402
from tempering.sandbox.remote import SandboxPool  # noqa: E402
from tempering.server.launch import launch  # noqa: E402

PROGRAM = "import sys; n = int(sys.stdin.read()); print(n * n)"
TOKEN = "bench-" + os.urandom(12).hex()


def load(run_one, runs: int, concurrency: int, on_half=None) -> dict:
    """runs/s, latency percentiles and the bookkeeping of `runs` calls of run_one(i) -> (status, stdout)."""
    lat: list[float] = []
    seen: dict[int, int] = {}
    statuses: dict[str, int] = {}
    wrong = 0
    lock = threading.Lock()

    def one(i: int) -> None:
        nonlocal wrong
        if on_half and i == runs // 2:
            on_half()
        t0 = time.perf_counter()
        status, out = run_one(i)
        dt = time.perf_counter() - t0
        with lock:
            lat.append(dt * 1000)
            seen[i] = seen.get(i, 0) + 1
            statuses[status] = statuses.get(status, 0) + 1
            if status == "ok" and out != f"{i * i}\n":
                wrong += 1

    t0 = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as ex:
        list(ex.map(one, range(runs)))
    wall = time.perf_counter() - t0
    q = statistics.quantiles(lat, n=100)
    return {"runs": runs, "concurrency": concurrency, "runs_per_s": round(runs / wall, 1),
            "p50_ms": round(q[49], 2), "p95_ms": round(q[94], 2), "statuses": statuses,
            "lost": runs - len(seen), "duplicated": sum(1 for v in seen.values() if v > 1), "wrong": wrong}


def main() -> None:
    ap = parser(__doc__, out=("runs/bench-sandbox-service.json", "where the JSON results go"))
    ap.add_argument("--runs", type=int, default=10_000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--replicas", type=int, default=2)
    ap.add_argument("--workers", type=int, default=4, help="runs at once per replica (its fork server's slots)")
    ap.add_argument("--kill", action="store_true", help="SIGKILL the first replica halfway through the pool's load")
    args = ap.parse_args()
    results: dict = {"cpu_count": os.cpu_count(), "args": vars(args)}

    with Sandbox(pool_size=args.replicas * args.workers) as sb:
        def local(i):
            r = sb.run(PROGRAM, stdin=str(i))
            return r.status, r.stdout
        sb.run("pass")
        results["in_process"] = load(local, args.runs, args.concurrency)
    print("in-process", results["in_process"], flush=True)

    work = tempfile.mkdtemp(prefix="bench-sandbox-service-")
    reps = [launch(work, f"r{i}", "--workers", str(args.workers), "--queue", str(args.runs), token=TOKEN)
            for i in range(args.replicas)]
    try:
        with SandboxPool([r.url for r in reps], token=TOKEN) as pool:
            def remote(i):
                r = pool.run(PROGRAM, stdin=str(i))
                return r.status, r.stdout
            pool.run("pass")
            kill = (lambda: os.kill(reps[0].proc.pid, signal.SIGKILL)) if args.kill else None
            results["pool"] = load(remote, args.runs, args.concurrency, on_half=kill)
            results["pool"]["replicas"] = pool.stats()
        print("pool", results["pool"], flush=True)

        live = reps[-1]
        with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=120,
                          limits=httpx.Limits(max_connections=args.concurrency)) as http:
            def fusion(i):
                resp = http.post(live.url + "/run_code", json={
                    "code": PROGRAM, "language": "python", "stdin": str(i), "compile_timeout": 10, "run_timeout": 10,
                    "memory_limit_MB": -1, "files": {}, "fetch_files": []})
                body = resp.json()
                if resp.status_code != 200 or body["status"] == "SandboxError":
                    return "sandbox_error", ""
                return ("ok" if body["status"] == "Success" else "error"), body["run_result"]["stdout"]
            results["run_code_one_replica"] = load(fusion, min(args.runs, 2000), args.concurrency)
        print("run_code", results["run_code_one_replica"], flush=True)
    finally:
        for r in reps:
            r.stop()
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(results, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
