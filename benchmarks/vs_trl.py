"""Tempering vs TRL's GRPOTrainer, side by side at equal wall time, on math/arith-v1 with
SmolLM2-135M-Instruct.

Shared settings: the same model and starting weights, the same prompts (the env's train
split, task i being `env.task("train", i)`; Tempering's curriculum is off so both draw from
that same stream), the same group size, completion length, learning rate, temperature,
prompts per optimiser step and no KL. Each side keeps its own loop otherwise:

    TRL        GRPOTrainer with its defaults for everything not listed (its loss type,
               reward scaling, generation via model.generate)
    Tempering  configs/smollm2-arith-grpo.yaml's loop: shared-prompt KV cache, continuous
               batching, dynamic sampling of informative groups

Runs alternate (TRL, Tempering, TRL, Tempering, ...) for --minutes each. Reported per run:
completions per second, optimiser steps, and held-out greedy accuracy (n = --n, the same
evaluation code for both) before and after. Usage:

    .venv/bin/pip install 'trl>=1.16'     # benchmark-only dependency
    .venv/bin/python benchmarks/vs_trl.py [--minutes 10] [--repeats 1] [--n 200] [--warmup N]
                                          [--curriculum] [--set KEY=VALUE] [--only trl|tempering] [--keep DIR]
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402
from tempering.config import load_config  # noqa: E402
from tempering.eval import evaluate  # noqa: E402
from tempering.models import load, resolve_path  # noqa: E402
from tempering.rollout import HFClient  # noqa: E402
from tempering.trainer import prepare_run, train  # noqa: E402

MODEL = "smollm2-135m-instruct"


def held_out(model, tokenizer, env, n: int) -> float:
    return evaluate(HFClient(model, tokenizer), env, "test", n, 64, 64, progress=False).accuracy


def run_trl(args, env, out: Path) -> dict:
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    loaded = load(MODEL)
    tasks = env.tasks("train", 4000)
    data = Dataset.from_list([{"prompt": [m.as_dict() for m in t.prompt], "index": i} for i, t in enumerate(tasks)])

    def reward(completions, index, **_):
        return [env.verify(tasks[i], c[0]["content"]).value for c, i in zip(completions, index)]

    deadline = time.monotonic() + args.minutes * 60

    class Budget(TrainerCallback):
        def on_step_end(self, _args, state, control, **_):
            control.should_training_stop = time.monotonic() > deadline

    cfg = GRPOConfig(
        output_dir=str(out), per_device_train_batch_size=args.prompts * args.group, num_generations=args.group,
        gradient_accumulation_steps=1, max_completion_length=args.tokens, learning_rate=args.lr,
        temperature=args.temperature, beta=0.0, max_steps=100_000, logging_steps=1, save_strategy="no",
        report_to=[], use_cpu=True, bf16=False, seed=0, warmup_steps=args.warmup, adam_beta2=0.99, max_grad_norm=1.0,
        disable_tqdm=True, log_level="error")
    trainer = GRPOTrainer(model=loaded.model, reward_funcs=reward, args=cfg, train_dataset=data,
                          processing_class=loaded.tokenizer, callbacks=[Budget()])
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    steps = trainer.state.global_step
    acc = held_out(trainer.model, loaded.tokenizer, env, args.n)
    per_step = [{k: v for k, v in log.items() if k in ("step", "reward", "reward_std", "learning_rate",
                                                      "completions/mean_length", "grad_norm", "loss")}
                for log in trainer.state.log_history if "reward" in log]
    return {"steps": steps, "completions": steps * args.prompts * args.group, "wall_s": wall, "accuracy": acc,
            "per_step": per_step}


def run_tempering(args, env, out: Path) -> dict:
    cfg = load_config("configs/smollm2-arith-grpo.yaml", [
        f"rollout.prompts_per_step={args.prompts}", f"rollout.group_size={args.group}",
        f"rollout.max_new_tokens={args.tokens}", f"rollout.temperature={args.temperature}", f"optim.lr={args.lr}",
        f"optim.warmup_steps={args.warmup}",
        "algorithm.beta=0", f"train.curriculum={str(args.curriculum).lower()}", f"train.max_minutes={args.minutes}",
        "train.save_every=1000", *args.set])
    prepare_run(cfg, out)
    t0 = time.perf_counter()
    metrics = train(cfg, out, progress=False)
    wall = time.perf_counter() - t0
    policy = load(str(sorted((out / "checkpoints").iterdir(), key=lambda p: int(p.name.split("-")[1]))[-1]))
    completions = sum(m["groups_sampled"] for m in metrics) * args.group
    per_step = [{k: m.get(k) for k in ("step", "reward_mean", "pass_rate", "response_len", "lr", "grad_norm",
                                       "groups_informative", "entropy")} for m in metrics]
    return {"steps": len(metrics), "completions": completions, "wall_s": wall,
            "accuracy": held_out(policy.model, policy.tokenizer, env, args.n), "per_step": per_step}


def main() -> None:
    ap = parser(__doc__, minutes=10.0, repeats=1, n=200, prompts=(16, "prompts per optimiser step"), group=8, tokens=(64, "max completion length"), out="runs/bench-vs-trl.json")
    ap.add_argument("--lr", type=float, default=4e-5)
    ap.add_argument("--temperature", type=float, default=0.7)
    ap.add_argument("--warmup", type=int, default=0, help="linear warm-up steps on both sides (TRL's starts at lr 0, "
                                                           "so with a few steps in the budget its first would not train)")
    ap.add_argument("--curriculum", action="store_true",
                    help="Tempering's family curriculum on (off by default, so both sides draw the same task stream)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a further override of Tempering's config (repeatable), e.g. algorithm.drop_zero_variance=false")
    ap.add_argument("--only", choices=["trl", "tempering"], help="run one side only (e.g. to study it)")
    ap.add_argument("--keep", help="keep each run's directory under this one (default: temporary)")
    args = ap.parse_args()
    resolve_path(MODEL)
    env = envs.make("math/arith-v1")
    base = load(MODEL)
    before = held_out(base.model, base.tokenizer, env, args.n)
    del base
    print(f"held-out accuracy before: {before:.1%} (n={args.n})", flush=True)
    runs: dict[str, list[dict]] = {"trl": [], "tempering": []}
    for rep in range(args.repeats):
        for name, fn in (("trl", run_trl), ("tempering", run_tempering)):
            if args.only and name != args.only:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                r = fn(args, env, Path(args.keep or tmp) / f"{name}-{rep + 1}")
            r["completions_per_s"] = r["completions"] / r["wall_s"]
            runs[name].append(r)
            print(f"  {name:9s} run {rep + 1}: {r['steps']} steps, {r['completions']} completions in {r['wall_s']:.0f} s "
                  f"= {r['completions_per_s']:.2f}/s; held-out {before:.1%} -> {r['accuracy']:.1%}", flush=True)
    med = {k: statistics.median(r["completions_per_s"] for r in v) for k, v in runs.items() if v}
    gain = {k: statistics.median(r["accuracy"] for r in v) - before for k, v in runs.items() if v}
    if len(med) == 2:
        print(f"\nthroughput tempering / trl: {med['tempering'] / med['trl']:.2f}x "
              f"({med['tempering']:.2f} vs {med['trl']:.2f} completions/s)")
    print("held-out gain: " + ", ".join(f"{k} {g:+.1%}" for k, g in gain.items()) + f" (n={args.n}, {args.minutes} min each)")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "before": before, "runs": runs}, indent=1))


if __name__ == "__main__":
    main()
