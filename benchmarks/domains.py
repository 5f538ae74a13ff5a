"""Held-out score per professional domain, single-turn and with feedback turns.

SmolLM2-135M-Instruct (greedy) on n held-out tasks of each env: the mean reward and the pass
rate of the first reply alone (max_turns = 1), and within K replies, where each wrong reply
gets the tool's verdict back (max_turns = K). Episodes run batched; wall time per setting.

    python benchmarks/domains.py [--envs finance/statements-v1,sql/sqlite-v1,cad/parts-v1]
                                 [--n 20] [--turns 3] [--max-new-tokens 256]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tempering import envs  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.rollout import Budget, HFClient, run_episodes  # noqa: E402
from tempering.types import SamplingParams  # noqa: E402

DEFAULT_ENVS = "finance/statements-v1,finance/filings-long-v1,sql/sqlite-v1,cad/parts-v1"


def play(env_id: str, turns: int, tasks, client, max_new_tokens: int) -> dict:
    t0 = time.perf_counter()
    trajs = run_episodes(lambda: envs.make(env_id, max_turns=turns), tasks, client,
                         SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens), Budget(max_turns=turns))
    seconds = time.perf_counter() - t0
    passed = [bool(tr.turns[-1].info.get("passed")) for tr in trajs]
    return {"turns": turns, "reward_mean": sum(tr.reward for tr in trajs) / len(trajs), "passed": sum(passed),
            "mean_turns": sum(len(tr.turns) for tr in trajs) / len(trajs), "seconds": round(seconds, 1),
            "statuses": [tr.turns[-1].info.get("status") for tr in trajs],
            "episodes": [{"task": t.id, "family": t.metadata.get("family"), "replies": [tu.action for tu in tr.turns],
                          "feedback": [m.content for tu in tr.turns for m in tu.feedback], "reward": tr.reward}
                         for t, tr in zip(tasks, trajs)]}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--envs", default=DEFAULT_ENVS)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--turns", type=int, default=3)
    ap.add_argument("--max-new-tokens", type=int, default=256)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    ap.add_argument("--out", default="runs/eval/domains.json")
    args = ap.parse_args()
    loaded = load(args.model)
    client = HFClient(loaded.model, loaded.tokenizer)
    results = {}
    for env_id in args.envs.split(","):
        tasks = envs.make(env_id).tasks("test", args.n)
        results[env_id] = [play(env_id, k, tasks, client, args.max_new_tokens) for k in sorted({1, args.turns})]
        for r in results[env_id]:
            print(f"{env_id:26s} K={r['turns']}: reward {r['reward_mean']:.3f}, passed {r['passed']}/{args.n}, "
                  f"mean turns {r['mean_turns']:.2f}, {r['seconds']:.0f} s", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"model": args.model, "n": args.n, "max_new_tokens": args.max_new_tokens,
                                          "results": results}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
