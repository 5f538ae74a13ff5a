"""GRPO vs Dr. GRPO vs DAPO on math/arith-v1 with SmolLM2-135M-Instruct, at equal wall time.

Each algorithm starts from the same weights and trains for the same number of minutes
with its own defaults (config.RECIPES: GRPO averages per sequence and keeps
every group; Dr. GRPO drops the std division and divides by a constant length; DAPO
uses token-level means, clip-higher, dynamic sampling and overlong shaping); everything
else comes from configs/smollm2-arith-grpo.yaml. Held-out greedy accuracy (n = 200) and
mean reply length are measured before and after each run.

    .venv/bin/python benchmarks/algorithms.py [--minutes 10] [--n 200] [--algorithms grpo,dr_grpo,dapo]
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402
from tempering.config import load_config  # noqa: E402
from tempering.eval import evaluate  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.rollout import HFClient  # noqa: E402
from tempering.trainer import prepare_run, train  # noqa: E402


def main() -> None:
    ap = parser(__doc__, minutes=10.0, n=200, out="runs/bench-algorithms")
    ap.add_argument("--algorithms", default="grpo,dr_grpo,dapo")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    env = envs.make("math/arith-v1")
    base = load("smollm2-135m-instruct")
    before = evaluate(HFClient(base.model, base.tokenizer), env, "test", args.n, 64, 64, progress=False)
    print(f"before: {before.accuracy:.1%} ({before.correct}/{args.n}), {before.mean_response_tokens:.1f} tokens", flush=True)
    results = {"minutes": args.minutes, "n": args.n, "before": {"accuracy": before.accuracy,
               "tokens": before.mean_response_tokens}, "runs": {}}
    for name in args.algorithms.split(","):
        # null settings fall back to the algorithm's own defaults
        cfg = load_config("configs/smollm2-arith-grpo.yaml", [
            f"algorithm.name={name}", "algorithm.loss_agg=null", "algorithm.drop_zero_variance=null",
            f"train.max_minutes={args.minutes}", f"name=bench-{name}"])
        run_dir = out / name
        prepare_run(cfg, run_dir)
        t0 = time.perf_counter()
        metrics = train(cfg, run_dir, progress=False)
        minutes = (time.perf_counter() - t0) / 60
        policy = load(str(sorted((run_dir / "checkpoints").iterdir(), key=lambda p: int(p.name.split("-")[1]))[-1]))
        after = evaluate(HFClient(policy.model, policy.tokenizer), env, "test", args.n, 64, 64, progress=False)
        trained = [m for m in metrics if "grad_norm" in m]
        results["runs"][name] = {
            "settings": {k: getattr(cfg.algorithm, k) for k in ("loss_agg", "clip_eps_high", "drop_zero_variance",
                                                               "overlong_filter", "overlong_buffer")},
            "steps": len(metrics), "updates": len(trained), "train_minutes": minutes,
            "completions": sum(m["groups_sampled"] for m in metrics) * cfg.rollout.group_size,
            "accuracy": after.accuracy, "correct": after.correct, "ci": [after.ci_low, after.ci_high],
            "tokens": after.mean_response_tokens,
            "train_reply_tokens_first_last": [metrics[0]["response_len"], metrics[-1]["response_len"]],
        }
        print(f"{name}: {after.accuracy:.1%} ({after.correct}/{args.n}) after {len(metrics)} steps "
              f"in {minutes:.1f} min, {after.mean_response_tokens:.1f} tokens", flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
