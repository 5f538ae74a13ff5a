"""Synchronous rounds vs the overlapped pipeline, side by side, on code/repair-v1 with
SmolLM2-135M-Instruct: steps per hour and the share of step time spent waiting on envs.

Both modes run the same RL step from the same weights with the same seeds, so they play
the same episodes (every reply draws from a stream fixed by its episode and turn) and the
update does the same work; only the scheduling differs:

    rounds   every round, all running episodes generate together, then all their env
             steps (sandbox runs of the code) happen while generation waits
    overlap  a reply goes to the sandbox the moment it is sampled, and that episode's next
             turn joins the running batch as soon as the sandbox answers

Runs alternate (rounds, overlap, rounds, overlap, ...) so machine noise hits both; medians
and the ratio are printed and appended to docs/benchmarks.md by hand. Usage:

    .venv/bin/python benchmarks/pipeline.py [--repeats 2] [--prompts 4] [--group 4] [--tokens 128]

On a GPU machine, where the real checkpoint cannot travel, `--random smollm2-135m` builds
the same shapes with random weights (benchmarks/gpu.py): generation and update time the
same, but every reply is noise, so every attempt fails, runs all its turns at the full token
budget, and each env step is a sandbox run of code that does not parse.

    python benchmarks/pipeline.py --random smollm2-135m --device cuda --dtype bfloat16 --prompts 16 --group 8
"""

from __future__ import annotations

import copy
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from _common import parser  # puts the repository on sys.path
from tempering import envs
from tempering.config import load_config, replace
from tempering.models import load
from tempering.trainer.run import _optimizer
from tempering.trainer.rl import RLStep


def one_step(cfg, loaded, initial: dict, env) -> dict:
    """One RL step from the initial weights; returns its metrics."""
    loaded.model.load_state_dict(initial)
    optimizer, scheduler = _optimizer(cfg, loaded.model)
    step = RLStep(cfg, env, loaded.model, loaded.tokenizer, optimizer, scheduler)
    with tempfile.TemporaryDirectory() as tmp:
        from tempering.scheduler.store import Store

        step.store = Store(Path(tmp) / "store.sqlite")  # as in a real run: every episode is written
        t = time.perf_counter()
        metrics = step.step(1)
        metrics["wall"] = time.perf_counter() - t
        step.store.close()
    return metrics


def main() -> None:
    ap = parser(__doc__, repeats=2, prompts=4, group=4, tokens=(128, "max new tokens per turn"), turns=3, device=("auto", "auto, cpu or cuda"), out="runs/bench-pipeline.json")
    ap.add_argument("--random", help="random weights of this shape (benchmarks/gpu.py ARCHS) instead of the real model")
    ap.add_argument("--dtype", default="float32")
    args = ap.parse_args()
    base = load_config("configs/smollm2-code-grpo.yaml", [
        f"rollout.prompts_per_step={args.prompts}", f"rollout.group_size={args.group}",
        f"rollout.max_new_tokens={args.tokens}", f"rollout.max_turns={args.turns}", "rollout.max_rounds_per_step=1",
        "algorithm.drop_zero_variance=false"])
    if args.random:
        from gpu import random_model  # benchmarks/gpu.py, beside this file

        loaded = random_model(args.random, args.dtype, args.device)
    else:
        loaded = load(base.model.name, args.dtype, args.device)
    initial = copy.deepcopy(loaded.model.state_dict())
    env = envs.make(base.env.id)
    where = torch.cuda.get_device_name() if loaded.model.device.type == "cuda" else f"cpu, {torch.get_num_threads()} threads"
    print(f"torch {torch.__version__}, {where}, {args.dtype}, {loaded.name}; {args.prompts} prompts x {args.group} "
          f"episodes, up to {args.turns} turns of {args.tokens} tokens")
    results: dict[str, list[dict]] = {"rounds": [], "overlap": []}
    for rep in range(args.repeats):
        for mode in results:
            cfg = replace(base, rollout={"pipeline": mode})
            m = one_step(cfg, loaded, initial, env)
            results[mode].append(m)
            print(f"  {mode:8s} run {rep + 1}: step {m['wall']:.1f} s (generate {m['time_generate']:.1f}, waiting on envs "
                  f"{m['time_score']:.1f}, update {m['time_update']:.1f}), {m['response_len']:.0f} tokens/attempt, "
                  f"pass {m['pass_rate']:.2f}, turns {m['turns_mean']:.2f}")
    med = {mode: statistics.median(m["wall"] for m in runs) for mode, runs in results.items()}
    wait = {mode: statistics.median(m["time_score"] / m["wall"] for m in runs) for mode, runs in results.items()}
    same = [a["response_len"] == b["response_len"] and a["pass_rate"] == b["pass_rate"]
            for a, b in zip(results["rounds"], results["overlap"])]
    print("\nmode      median step   steps/hour   share of step waiting on envs")
    for mode in results:
        print(f"{mode:8s}  {med[mode]:9.1f} s   {3600 / med[mode]:9.1f}    {wait[mode]:.1%}")
    print(f"throughput overlap / rounds: {med['rounds'] / med['overlap']:.2f}x; same episodes in both modes: {all(same)}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"args": vars(args), "results": results}, indent=1, default=str))


if __name__ == "__main__":
    main()
