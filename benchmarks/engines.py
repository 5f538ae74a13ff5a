"""Rollout engines side by side: tokens/s of HFClient and vLLM (fp32, bf16), greedy and sampled,
on the same arithmetic chat prompts; and whether fp32 greedy outputs equal HFClient's.

Each engine runs in its own child process, one after the other (two torch processes at once
on 2 cores slow each other ~5x), `--repeats` times; the table gives medians and ratios to
HFClient. The CPU's flags are printed: bf16 is fast only where the CPU has AVX-512 BF16.

    python benchmarks/engines.py --prompts 64 --tokens 128 --repeats 3 --out runs/bench-engines.json
    python benchmarks/engines.py --equal --n 70 --out runs/bench-engines-equal.json   # greedy equality, 3 envs x 70
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time

from _common import REPO, parser

ENGINES = (("hf", "float32"), ("vllm", "float32"), ("vllm", "bfloat16"))
EQUAL_ENVS = ("math/arith-v1", "code/synth-v1", "sql/sqlite-v1")


def prompts_of(env_id: str, n: int, tokenizer) -> list[list[int]]:
    from tempering import envs
    from tempering.rollout import chat_prompt_ids

    return [chat_prompt_ids(tokenizer, t.prompt) for t in envs.make(env_id).tasks("test", n)]


def child(args) -> None:
    """One engine: time generation (or write greedy outputs) and print one JSON line."""
    from tempering.models import load, resolve_path
    from tempering.rollout.engines import make_client
    from tempering.types import SamplingParams

    loaded = load(args.model)
    t = time.perf_counter()
    client = make_client(args.engine, loaded.model, loaded.tokenizer, resolve_path(args.model),
                         max_batch=max(args.prompts, 64), dtype=args.dtype)
    start_s = time.perf_counter() - t
    if args.equal:
        out = {}
        for env_id in EQUAL_ENVS:
            comps = client.generate_ids(prompts_of(env_id, args.n, loaded.tokenizer),
                                        SamplingParams(temperature=0, max_new_tokens=args.tokens))
            out[env_id] = [list(c.token_ids) for c in comps]
        print("RESULT " + json.dumps({"start_s": start_s, "outputs": out}), flush=True)
        return
    ids = prompts_of("math/arith-v1", args.prompts, loaded.tokenizer)
    res = {"start_s": start_s}
    for name, temp in (("greedy", 0.0), ("sampled", 0.7)):
        params = SamplingParams(temperature=temp, max_new_tokens=args.tokens, seed=0)
        client.generate_ids(ids[:4], params)  # warm-up
        t = time.perf_counter()
        comps = client.generate_ids(ids, params)
        s = time.perf_counter() - t
        tokens = sum(len(c.token_ids) for c in comps)
        res[name] = {"tokens": tokens, "seconds": s, "tok_s": tokens / s}
    print("RESULT " + json.dumps(res), flush=True)


def run_child(args, engine: str, dtype: str) -> dict:
    cmd = [sys.executable, __file__, "--child", "--engine", engine, "--dtype", dtype, "--model", args.model,
           "--prompts", str(args.prompts), "--tokens", str(args.tokens), "--n", str(args.n)] + (["--equal"] if args.equal else [])
    p = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise SystemExit(f"{engine} {dtype} failed:\n{p.stderr[-3000:]}")


def cpu_flags() -> str:
    from tempering.rollout.vllm_client import _cpu_flags

    f = _cpu_flags()
    return ", ".join(x for x in ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "avx512_vnni") if x in f) or "none of avx2/avx512"


def main() -> None:
    ap = parser(__doc__, model="smollm2-135m-instruct", prompts=64, tokens=128, repeats=3, n=200,
                out="runs/bench-engines.json")
    ap.add_argument("--child", action="store_true", help=argparse_hide())
    ap.add_argument("--engine", default="hf")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--engines", nargs="+", default=["hf", "vllm", "vllm-bf16"],
                    help="which of hf, vllm (fp32), vllm-bf16 to time (bf16 is slow without AVX-512 BF16)")
    ap.add_argument("--equal", action="store_true", help="fp32 greedy outputs of both engines on --n prompts of three envs")
    args = ap.parse_args()
    if args.child:
        return child(args)
    print(f"CPU flags: {cpu_flags()}")
    if args.equal:
        args.tokens = min(args.tokens, 96)
        hf, vl = run_child(args, "hf", "float32"), run_child(args, "vllm", "float32")
        result = {"cpu": cpu_flags(), "envs": {}}
        for env_id in EQUAL_ENVS:
            a, b = hf["outputs"][env_id], vl["outputs"][env_id]
            differ = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
            first = [next(j for j, (u, v) in enumerate(zip(a[i] + [-1], b[i] + [-2])) if u != v) for i in differ]
            result["envs"][env_id] = {"prompts": len(a), "identical": len(a) - len(differ), "differ": differ,
                                      "first_diff_token": first}
            print(f"{env_id}: {len(a) - len(differ)}/{len(a)} identical; differing at tokens {first[:10]}")
        _write(args.out, result)
        return
    chosen = [(e, d) for e, d in ENGINES if (e if d == "float32" else "vllm-bf16") in args.engines]
    rows = {f"{e} {d}": [] for e, d in chosen}
    for _ in range(args.repeats):
        for e, d in chosen:
            rows[f"{e} {d}"].append(run_child(args, e, d))
    table = {}
    for key, runs in rows.items():
        table[key] = {m: statistics.median(r[m]["tok_s"] for r in runs) for m in ("greedy", "sampled")}
        table[key]["start_s"] = statistics.median(r["start_s"] for r in runs)
        table[key]["tokens"] = {m: [r[m]["tokens"] for r in runs] for m in ("greedy", "sampled")}
    base = table["hf float32"]
    print(f"{args.prompts} prompts x {args.tokens} tokens, median of {args.repeats}")
    print("| engine | greedy tok/s | x hf | T=0.7 tok/s | x hf | start s |")
    for key, t in table.items():
        print(f"| {key} | {t['greedy']:.0f} | {t['greedy'] / base['greedy']:.2f} | {t['sampled']:.0f} | "
              f"{t['sampled'] / base['sampled']:.2f} | {t['start_s']:.1f} |")
    _write(args.out, {"cpu": cpu_flags(), "prompts": args.prompts, "tokens": args.tokens, "repeats": args.repeats,
                      "table": table, "runs": rows})


def argparse_hide():
    import argparse

    return argparse.SUPPRESS


def _write(path: str, obj) -> None:
    from pathlib import Path

    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(obj, indent=1))


if __name__ == "__main__":
    main()
