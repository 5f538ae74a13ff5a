"""`temper plan CONFIG`: before a run, its decision checklist with risks flagged, and its time,
tokens, memory and cost estimated from a short measured probe (a few real steps and one
batch of held-out evaluation, in a scratch directory that is removed afterwards)."""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import tempfile
import time
from pathlib import Path


def run_probe(cfg, steps: int):
    """Measure load, step and evaluation costs of `cfg` on this machine."""
    from tempering import envs
    from tempering.config import RECIPES, replace
    from tempering.envs.check import check_env
    from tempering.eval import evaluate
    from tempering.models import load
    from tempering.rollout import HFClient
    from tempering.safety.budget import cpu_seconds
    from tempering.safety.plan import Probe
    from tempering.trainer import prepare_run, train

    rl = RECIPES[cfg.algorithm.name].kind == "rl"
    env_ids = list(cfg.env.mix) or [cfg.env.id]
    verified = {e: check_env(e, n=3).ok for e in env_ids} if rl else {}
    t0 = time.perf_counter()
    policy = load(cfg.model.name, cfg.model.dtype)
    load_s = time.perf_counter() - t0
    scratch = Path(tempfile.mkdtemp(prefix="temper-plan-"))
    try:
        probe_cfg = replace(cfg, train={"steps": steps, "max_minutes": 0.0, "save_every": steps + 1},
                            log={"report": False, "tensorboard": False, "wandb": "off"})
        prepare_run(probe_cfg, scratch / "run")
        cpu0 = cpu_seconds()
        metrics = train(probe_cfg, scratch / "run", steps=steps, progress=False, policy=policy)
        cpu_per_step = (cpu_seconds() - cpu0) / max(len(metrics), 1)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    eval_task_s = 0.0
    if cfg.eval.n > 0 and rl:
        n = min(cfg.eval.n, cfg.eval.batch_size)
        result = evaluate(HFClient(policy.model, policy.tokenizer), envs.make(cfg.env.id) if not cfg.env.mix else
                          envs.make(env_ids[0]), "test", n, cfg.eval.max_new_tokens, cfg.eval.batch_size, progress=False)
        eval_task_s = result.seconds / n
    tokens = [m.get("tokens_per_s", 0.0) * m.get("time_generate", 0.0) for m in metrics]
    return Probe(load_s=load_s, step_s=[m["time_step"] if "time_step" in m else 0.0 for m in metrics],
                 eval_task_s=eval_task_s, peak_rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                 tokens_per_step=sum(tokens) / max(len(tokens), 1), cpu_s_per_step=cpu_per_step,
                 verified_envs=verified)


def _cmd_plan(args: argparse.Namespace) -> int:
    from tempering.config import load_config
    from tempering.safety.plan import checklist, estimate

    cfg = load_config(args.config, args.set)
    probe = run_probe(cfg, args.probe_steps)
    items = checklist(cfg, probe.verified_envs)
    est = estimate(cfg, probe, eval_runs=args.eval_runs)
    if args.json:
        print(json.dumps({"checklist": [i.__dict__ for i in items], "estimate": est, "probe": probe.__dict__}, indent=1))
        return 0
    print(f"plan for {args.config} ({cfg.algorithm.name} on {', '.join(cfg.env.mix) or cfg.env.id}, "
          f"model {cfg.model.name})\n")
    for item in items:
        flag = "RISK " if item.risk else "     "
        print(f"{flag}[{item.section}] {item.text}" + (f"\n        -> {item.risk}" if item.risk else ""))
    print(f"\nprobe: model load {probe.load_s:.0f} s; {len(probe.step_s)} steps of "
          f"{', '.join(f'{s:.1f}' for s in probe.step_s)} s; {probe.eval_task_s:.2f} s per evaluated task; "
          f"{probe.tokens_per_step:.0f} generated tokens per step; peak RSS {probe.peak_rss_mb / 1024:.1f} GB")
    bound = " (the time budget ends it first)" if est["budget_bound"] else ""
    print(f"estimate: {est['steps']} steps{bound} x {est['step_s']:.0f} s = {est['train_s'] / 60:.1f} min training, "
          f"{est['eval_s'] / 60:.1f} min for {args.eval_runs} evaluations of {cfg.eval.n} tasks, "
          f"{est['total_s'] / 60:.1f} min in all; {est['tokens']:.0f} generated tokens; "
          f"{est['cpu_hours']:.2f} CPU-hours of training" + (f", cost {est['cost']:.2f}" if "cost" in est else ""))
    return 0


def add_plan_parser(sub) -> None:
    p = sub.add_parser("plan", help="a run's decision checklist with risks flagged, and its cost from a short probe")
    p.add_argument("config", help="run config, e.g. configs/smollm2-arith-grpo.yaml (what temper demo runs)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--probe-steps", type=int, default=2, help="real training steps to measure (the first warms up)")
    p.add_argument("--eval-runs", type=int, default=2, help="held-out evaluations the run makes (the demo: before "
                                                            "and after)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=_cmd_plan)
