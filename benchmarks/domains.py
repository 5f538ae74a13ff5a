"""Held-out score per professional domain, single-turn and with feedback turns.

SmolLM2-135M-Instruct (greedy) on n held-out tasks of each env: the mean reward and the pass
rate of the first reply alone (max_turns = 1), and within K replies, where each wrong reply
gets the tool's verdict back (max_turns = K). Episodes run batched; wall time per setting.

    python benchmarks/domains.py [--envs finance/statements-v1,sql/sqlite-v1,cad/parts-v1]
                                 [--n 20] [--turns 3] [--max-new-tokens 256]
"""

from __future__ import annotations

import json
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering.eval import evaluate_episodes  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.rollout import HFClient  # noqa: E402

DEFAULT_ENVS = "finance/statements-v1,finance/filings-long-v1,sql/sqlite-v1,cad/parts-v1"


def main() -> None:
    ap = parser(__doc__, n=20, turns=3, max_new_tokens=256, model="smollm2-135m-instruct", out="runs/eval/domains.json")
    ap.add_argument("--envs", default=DEFAULT_ENVS)
    args = ap.parse_args()
    loaded = load(args.model)
    client = HFClient(loaded.model, loaded.tokenizer)
    results = {}
    for env_id in args.envs.split(","):
        results[env_id] = []
        for k in sorted({1, args.turns}):
            r = evaluate_episodes(client, env_id, "test", args.n, k, args.max_new_tokens)
            row = {"turns": k, "reward_mean": sum(i["reward"] for i in r.items) / r.n, "passed": r.correct,
                   "mean_turns": sum(i["turns"] for i in r.items) / r.n, "seconds": round(r.seconds, 1),
                   "episodes": r.items}
            results[env_id].append(row)
            print(f"{env_id:26s} K={k}: reward {row['reward_mean']:.3f}, passed {r.correct}/{r.n}, "
                  f"mean turns {row['mean_turns']:.2f}, {r.seconds:.0f} s", flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"model": args.model, "n": args.n, "max_new_tokens": args.max_new_tokens,
                                          "results": results}, indent=1))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
