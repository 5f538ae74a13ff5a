"""Writing the run report for a store of N episodes: median seconds over repeats and the file's
size. Each episode has a 3-turn transcript of realistic size (a 1,500-character reply, an
800-character feedback and a 600-character execution record per turn) and an advantage;
one metric line per 8 episodes.

    python benchmarks/report.py --n 1000 --repeats 5
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import parser

from tempering.scheduler.store import EpisodeRecord, Store


def fill(store: Store, n: int) -> None:
    for i in range(n):
        step, slot = 1 + i // 8, i % 8
        turns = tuple({"reward": 0.5, "status": "failed", "env_s": 0.05, "reply": "def f(x):\n    return x\n" * 60,
                       "feedback": "AssertionError: f(3) returned 3, expected 4\n" * 18,
                       "info": {"sandbox_status": "ok", "wall_s": 0.04, "stdout": "x" * 540}} for _ in range(3))
        store.add_episode(EpisodeRecord(step=step, round=0, slot=slot, task_id=f"code/repair-v1/train/{i}",
                                        domain="code", family=f"fam{i % 12}", reward=float(i % 3 == 0),
                                        passed=i % 3 == 0, turns=3, truncated=False, stop_reason="terminated",
                                        env_s=0.15, prompt_ids=tuple(range(300)), sequence=tuple(range(600)),
                                        mask=(1,) * 600, wall_s=4.0, turn_records=turns))
        if slot == 7:
            store.add_metrics(step, {"step": step, "reward_mean": 0.3 + 0.01 * step, "pass_rate": 0.3, "kl": 0.001 * step,
                                     "entropy": 0.5, "response_len": 120.0, "time_generate": 30.0, "time_score": 2.0,
                                     "time_update": 40.0, "tokens_per_s": 25.0})
    store.add_advantages(1, [((1 + i // 8, 0, i % 8), float(i % 3 == 0), 0.5) for i in range(n)])


def main() -> None:
    ap = parser(__doc__, n=1000, repeats=5, out="runs/bench-report.json")
    args = ap.parse_args()
    t = time.perf_counter()
    from tempering.eval.report import write_report  # imports Plotly

    import_s = time.perf_counter() - t
    with tempfile.TemporaryDirectory() as d:
        run = Path(d)
        store = Store(run / "store.sqlite")
        fill(store, args.n)
        store.close()
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            out = write_report(run)
            times.append(time.perf_counter() - t)
        size = out.stat().st_size
    result = {"episodes": args.n, "import_s": import_s, "seconds": times, "median_s": statistics.median(times), "bytes": size}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=1))
    print(f"{args.n} episodes: median {result['median_s']:.2f} s over {args.repeats} writes "
          f"(first {times[0]:.2f} s), {size / 1e6:.1f} MB; importing the module (Plotly) {import_s:.2f} s")


if __name__ == "__main__":
    main()
