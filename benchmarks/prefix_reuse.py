"""Multi-turn episodes with and without the prefix store, side by side: each later turn
prefills only the env's feedback on top of the last turn's KV cache, or the whole
conversation again. SmolLM2-135M-Instruct, greedy `code/repair-v1` episodes of up to 3
replies (the pipeline's evaluation), alternating runs on the same tasks. Also checks that
both give the same replies and verdicts.

    .venv/bin/python benchmarks/prefix_reuse.py --n 50 --repeats 2
"""
import json
import statistics
import time
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path
from tempering import envs  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.rollout import Budget, HFClient, run_episodes  # noqa: E402
from tempering.types import SamplingParams  # noqa: E402


def main() -> None:
    ap = parser(__doc__, model="smollm2-135m-instruct", n=50, repeats=2, turns=3, max_new_tokens=160,
                out="runs/bench-prefix-reuse.json")
    ap.add_argument("--env", default="code/repair-v1", help="a multi-turn env (default: %(default)s)")
    args = ap.parse_args()
    m = load(args.model)
    tasks = envs.make(args.env).tasks("test", args.n)
    params = SamplingParams(temperature=0.0, max_new_tokens=args.max_new_tokens)

    def play(prefix_bytes: int) -> dict:
        client = HFClient(m.model, m.tokenizer, prefix_bytes=prefix_bytes)
        engine, engines = client.engine, []
        client.engine = lambda p: engines.append(engine(p)) or engines[-1]
        t0 = time.perf_counter()
        trajs = run_episodes(lambda: envs.make(args.env, max_turns=args.turns), tasks, client, params,
                             Budget(max_turns=args.turns))
        return {"seconds": time.perf_counter() - t0, "prefilled": sum(e.prefilled for e in engines),
                "generated": sum(sum(t.loss_mask) for t in trajs), "passed": sum(t.turns[-1].passed for t in trajs),
                "turns": sum(len(t.turns) for t in trajs), "replies": [[t.action for t in tr.turns] for tr in trajs],
                "hits": client.prefixes.hits if client.prefixes else 0}

    runs: dict[str, list[dict]] = {"whole": [], "reused": []}
    for _ in range(args.repeats):
        for name, size in (("whole", 0), ("reused", 4 << 30)):
            r = play(size)
            runs[name].append(r)
            print(f"{name}: {r['seconds']:.1f} s, {r['prefilled']} prompt tokens prefilled, {r['generated']} generated, "
                  f"{r['turns']} turns, {r['passed']}/{args.n} passed, {r['hits']} reused caches", flush=True)
    med = {k: statistics.median(r["seconds"] for r in v) for k, v in runs.items()}
    same = sum(a == b for a, b in zip(runs["whole"][-1]["replies"], runs["reused"][-1]["replies"]))
    summary = {"env": args.env, "n": args.n, "turns": args.turns, "median_s": med,
               "speedup": med["whole"] / med["reused"], "same_episodes": same,
               "prefilled": {k: v[-1]["prefilled"] for k, v in runs.items()},
               "seconds": {k: [r["seconds"] for r in v] for k, v in runs.items()}}
    print(json.dumps(summary, indent=1))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
