"""Update time with and without skipping zero-advantage groups, side by side, on one real
GRPO batch of math/arith-v1 with SmolLM2-135M-Instruct.

With dynamic sampling off (grpo's default), every sampled group is trained, and a group
whose attempts all scored the same has advantages of exactly 0: with no KL term in the loss
and no entropy bonus it adds nothing to the gradient. RLStep skips such groups (their tokens
still count in the normaliser). This times `RLStep.update` on the same batch from the same
weights both ways, alternating, and checks the weights come out identical.

    .venv/bin/python benchmarks/idle_groups.py [--repeats 3] [--prompts 16] [--group 8]
"""

from __future__ import annotations

import copy
import statistics
import time

import torch

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering import envs  # noqa: E402
from tempering.config import load_config  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.trainer.rl import RLStep  # noqa: E402
from tempering.trainer.run import _optimizer  # noqa: E402


def main() -> None:
    ap = parser(__doc__, repeats=3, prompts=16, group=8, model="smollm2-135m-instruct")
    args = ap.parse_args()
    cfg = load_config("configs/smollm2-arith-grpo.yaml", [
        f"rollout.prompts_per_step={args.prompts}", f"rollout.group_size={args.group}",
        "algorithm.drop_zero_variance=false", "optim.warmup_steps=0", f"model.name={args.model}"])
    loaded = load(cfg.model.name)
    initial = copy.deepcopy(loaded.model.state_dict())
    env = envs.make(cfg.env.id)

    def step_for(skip: bool) -> RLStep:
        loaded.model.load_state_dict(initial)
        opt, sched = _optimizer(cfg, loaded.model)
        step = RLStep(cfg, env, loaded.model, loaded.tokenizer, opt, sched)
        if not skip:
            step._idle = lambda advantages, use_ref: [False] * len(advantages)
        return step

    batch, _, _ = step_for(True).collect(1)
    idle = sum(len(set(g.rewards)) == 1 for g in batch)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads; {len(batch)} groups x {args.group}, "
          f"{idle} with all rewards equal", flush=True)
    times: dict[str, list[float]] = {"skip idle groups": [], "run every group": []}
    weights: dict[str, list[torch.Tensor]] = {}
    for _ in range(args.repeats):
        for name in times:
            step = step_for(name == "skip idle groups")
            t = time.perf_counter()
            step.update(batch)
            times[name].append(time.perf_counter() - t)
            weights[name] = [p.detach().clone() for p in loaded.model.parameters()]
            print(f"  {name:17s} {times[name][-1]:6.1f} s", flush=True)
    same = all(torch.equal(a, b) for a, b in zip(*weights.values()))
    med = {k: statistics.median(v) for k, v in times.items()}
    for k, v in med.items():
        print(f"{k:17s} median {v:6.1f} s  runs {[round(x, 1) for x in times[k]]}")
    print(f"speed-up: {med['run every group'] / med['skip idle groups']:.2f}x; identical weights: {same}")


if __name__ == "__main__":
    main()
