"""`make test-loaded`: the test suite while a CPU hog keeps every core busy.

A test whose outcome depends on the machine's speed fails here, not on a newcomer's
laptop. The hog is one busy-looping process per core, at normal priority, in a session
of its own (as another program on the machine would be). The suite runs `--runs` times
in a row beside it, then `--nice-runs` more times under `nice -n 19` while the hog stays
at nice 0. Each run's wall time and pytest's closing line are printed and written to
`runs/test-loaded.json`; the exit code is pytest's first non-zero one, else 0.

On a kernel with autogroup scheduling (Debian's default, /proc/sys/kernel/sched_autogroup_enabled),
nice only orders processes within one session's group, so the niced suite still gets
the share of the CPU the session has; a hog in the suite's own session would leave it
under 1% of a core, where any suite's harness timeouts end it.

    python tests/loaded.py [--runs 3] [--nice-runs 1] [-- PYTEST ARGS]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HOG = "while True:\n    pass\n"
REPO = Path(__file__).resolve().parents[1]


def start_hog(cores: int) -> list[subprocess.Popen]:
    return [subprocess.Popen([sys.executable, "-c", HOG], start_new_session=True) for _ in range(cores)]


def run_suite(pytest_args: list[str], nice: bool) -> dict:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *pytest_args]
    if nice:
        cmd = ["nice", "-n", "19", *cmd]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.monotonic() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip()]
    summary = lines[-1] if lines else proc.stderr.strip()[-300:]
    failures = [ln for ln in lines if ln.startswith(("FAILED", "ERROR"))]
    return {"nice": nice, "returncode": proc.returncode, "wall_s": round(wall, 1), "summary": summary,
            "failures": failures}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="suite runs beside the hog")
    ap.add_argument("--nice-runs", type=int, default=1, help="further runs under nice -n 19, the hog at nice 0")
    ap.add_argument("--cores", type=int, default=os.cpu_count() or 2, help="hog processes (default: one per core)")
    ap.add_argument("--out", default=str(REPO / "runs" / "test-loaded.json"))
    ap.add_argument("pytest_args", nargs="*", help="passed to pytest after --")
    args = ap.parse_args(argv)
    hog = start_hog(args.cores)
    results = []
    try:
        for i in range(args.runs + args.nice_runs):
            nice = i >= args.runs
            r = run_suite(args.pytest_args, nice)
            results.append(r)
            print(f"run {i + 1} ({'nice -n 19, ' if nice else ''}hog on {args.cores} cores): "
                  f"{r['summary']} [{r['wall_s']:.0f} s]", flush=True)
            for f in r["failures"]:
                print("   ", f, flush=True)
    finally:
        for p in hog:
            p.kill()
            p.wait()
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"cores": args.cores, "runs": results}, indent=1) + "\n")
    return next((r["returncode"] for r in results if r["returncode"]), 0)


if __name__ == "__main__":
    sys.exit(main())
