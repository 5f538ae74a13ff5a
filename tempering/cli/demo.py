"""`temper demo`: held-out accuracy of SmolLM2-135M-Instruct before and after a bounded GRPO run.

    1. evaluate the pretrained model greedily on held-out math/arith-v1 tasks
    2. train it with GRPO for the configured minutes (one model in memory throughout)
    3. evaluate the trained policy on the same tasks, print a table, write demo.json + demo.png
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tempering import envs
from tempering.config import load_config
from tempering.eval import evaluate
from tempering.eval.plot import plot_demo
from tempering.eval.report import write_report
from tempering.models import load
from tempering.rollout import HFClient
from tempering.trainer import prepare_run, train


def run_demo(config_path: Path, minutes: float | None = None, n_eval: int | None = None, run_dir: Path | None = None,
             overrides: list[str] | None = None) -> dict:
    """`overrides` are `--set KEY=VALUE` strings, e.g. rollout.engine=vllm to sample rollouts on vLLM
    (the evaluations stay on the policy's own weights: greedy fp32 gives the same tokens on both)."""
    overrides = list(overrides or [])
    overrides += [f"train.max_minutes={minutes}"] if minutes is not None else []
    overrides += [f"eval.n={n_eval}"] if n_eval is not None else []
    cfg = load_config(config_path, overrides)
    run_dir = run_dir or Path("runs") / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    console = Console()
    env = envs.make(cfg.env.id)
    prepare_run(cfg, run_dir)
    policy = load(cfg.model.name, cfg.model.dtype)
    client = HFClient(policy.model, policy.tokenizer)
    ev = cfg.eval

    console.print(f"[bold]1/3[/] held-out accuracy of {cfg.model.name} before training ({ev.n} tasks, greedy)")
    before = evaluate(client, env, "test", ev.n, ev.max_new_tokens, ev.batch_size)
    before.write_json(run_dir / "eval-before.json")
    console.print(before.summary())

    console.print(f"[bold]2/3[/] GRPO for up to {cfg.train.max_minutes:g} minutes, rollouts on {cfg.rollout.engine}")
    t0 = time.perf_counter()
    train(cfg, run_dir, policy=policy)
    train_minutes = (time.perf_counter() - t0) / 60
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]

    console.print("[bold]3/3[/] held-out accuracy after training")
    after = evaluate(client, env, "test", ev.n, ev.max_new_tokens, ev.batch_size)
    after.write_json(run_dir / "eval-after.json")

    flips = _flips(before.items, after.items)
    table = Table(title=f"{cfg.env.id} held-out ({ev.n} tasks, greedy, seed {cfg.seed})")
    for col in ("", "accuracy", "95% CI", "answer format used", "mean reply tokens"):
        table.add_column(col)
    for name, r in (("before", before), ("after", after)):
        table.add_row(name, f"{r.accuracy:.1%}", f"[{r.ci_low:.1%}, {r.ci_high:.1%}]", f"{r.format_rate:.1%}", f"{r.mean_response_tokens:.1f}")
    console.print(table)
    console.print(f"change: {100 * (after.accuracy - before.accuracy):+.1f} points; wrong->right {flips[0]}, right->wrong {flips[1]}; "
                  f"{len(metrics)} updates in {train_minutes:.1f} min")
    png = plot_demo(metrics, before.accuracy, after.accuracy, run_dir / "demo.png",
                    ci=((before.ci_low, before.ci_high), (after.ci_low, after.ci_high)))
    summary = {
        "run_dir": str(run_dir), "config": str(config_path), "env": cfg.env.id, "seed": cfg.seed, "n_eval": ev.n,
        "engine": cfg.rollout.engine,
        "before": {"accuracy": before.accuracy, "ci": [before.ci_low, before.ci_high], "format_rate": before.format_rate,
                   "mean_response_tokens": before.mean_response_tokens},
        "after": {"accuracy": after.accuracy, "ci": [after.ci_low, after.ci_high], "format_rate": after.format_rate,
                  "mean_response_tokens": after.mean_response_tokens},
        "wrong_to_right": flips[0], "right_to_wrong": flips[1], "updates": len(metrics), "train_minutes": train_minutes,
        "eval_seconds": [before.seconds, after.seconds], "plot": str(png),
    }
    (run_dir / "demo.json").write_text(json.dumps(summary, indent=1))
    report = write_report(run_dir)  # again, now with the before/after table
    console.print(f"wrote {run_dir / 'demo.json'}, {png} and {report}")
    return summary


def _flips(before: list[dict], after: list[dict]) -> tuple[int, int]:
    pairs = list(zip((b["passed"] for b in before), (a["passed"] for a in after)))
    return sum(not b and a for b, a in pairs), sum(b and not a for b, a in pairs)
