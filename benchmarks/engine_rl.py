"""GRPO updates per hour with each rollout engine, side by side: the same config, the same
seed, one engine after the other (never two torch processes at once), each for --minutes of
training. Reports updates, seconds per update split into generation and the rest, tokens/s
while generating, and the sync check and sampler mismatch vLLM logged.

    python benchmarks/engine_rl.py --config configs/smollm2-arith-grpo.yaml --minutes 10 \
        --engines hf vllm --out runs/bench-engine-rl.json
    python benchmarks/engine_rl.py --config configs/smollm2-arith-grpo.yaml --minutes 10 \
        --engines vllm --set rollout.engine_dtype=bfloat16 --out runs/bench-engine-rl-bf16.json
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import REPO, parser


def one(config: str, engine: str, minutes: float, run_dir: Path, extra: list[str]) -> dict:
    sets = [f"rollout.engine={engine}", f"train.max_minutes={minutes}", "train.save_every=1000", "log.report=false",
            *extra]
    cmd = [sys.executable, "-m", "tempering.cli.main", "train", config, "--run-dir", str(run_dir)]
    for s in sets:
        cmd += ["--set", s]
    t = time.perf_counter()
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(f"{engine} failed:\n{p.stderr[-3000:]}")
    lines = [json.loads(x) for x in (run_dir / "metrics.jsonl").read_text().splitlines() if x.strip()]
    steps = [m for m in lines if "time_step" in m]
    med = lambda k: statistics.median(m[k] for m in steps if k in m) if any(k in m for m in steps) else None  # noqa: E731
    mx = lambda k: max((m[k] for m in steps if k in m), default=None)  # noqa: E731
    updates = sum(1 for m in steps if not m.get("skipped_update"))
    train_s = sum(m["time_step"] for m in steps)
    return {"engine": engine, "updates": updates, "steps": len(steps), "train_s": train_s, "wall_s": wall,
            "updates_per_hour": updates / max(train_s, 1e-9) * 3600,
            "s_per_step": med("time_step"), "generate_s": med("time_generate"), "update_s": med("time_update"),
            "tokens_per_s": med("tokens_per_s"), "reward_mean": statistics.mean(m["reward_mean"] for m in steps),
            "pass_rate_last5": statistics.mean(m["pass_rate"] for m in steps[-5:]),
            "sync_s": med("rollout/sync_s"), "probe_diff_max": mx("rollout/probe_diff_max"),
            "sync_ok_all": all(m.get("rollout/sync_ok", 1.0) == 1.0 for m in steps),
            "logprob_diff_mean": med("rollout/logprob_diff_mean"), "logprob_diff_max": mx("rollout/logprob_diff_max"),
            "tis_clipped_frac": med("rollout/tis_clipped_frac")}


def main() -> None:
    ap = parser(__doc__, minutes=10.0, out="runs/bench-engine-rl.json")
    ap.add_argument("--config", default="configs/smollm2-arith-grpo.yaml")
    ap.add_argument("--engines", nargs="+", default=["hf", "vllm"])
    ap.add_argument("--set", action="append", default=[], help="extra config overrides for every run")
    args = ap.parse_args()
    out = Path(args.out)
    rows = []
    for engine in args.engines:
        row = one(args.config, engine, args.minutes, out.with_suffix("") / engine, args.set)
        rows.append(row)
        print(json.dumps(row), flush=True)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"config": args.config, "minutes": args.minutes, "sets": args.set, "rows": rows}, indent=1))
    base = rows[0]
    print("| engine | updates | updates/h | x first | s/step | generate s | update s | tok/s | sync s | probe diff max | logprob diff mean/max |")
    for r in rows:
        f = lambda v, p=2: "-" if v is None else f"{v:.{p}f}"  # noqa: E731
        print(f"| {r['engine']} | {r['updates']} | {r['updates_per_hour']:.0f} | {r['updates_per_hour'] / base['updates_per_hour']:.2f} "
              f"| {f(r['s_per_step'], 1)} | {f(r['generate_s'], 1)} | {f(r['update_s'], 1)} | {f(r['tokens_per_s'], 0)} "
              f"| {f(r['sync_s'])} | {f(r['probe_diff_max'], 5)} | {f(r['logprob_diff_mean'], 5)} / {f(r['logprob_diff_max'], 4)} |")


if __name__ == "__main__":
    main()
