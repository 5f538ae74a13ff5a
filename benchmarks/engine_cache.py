"""The engine's KV cache, side by side: this checkout's engine vs an earlier revision's
(`--old REV`), alternating runs on the same prompts and seeds. SmolLM2-135M-Instruct,
HumanEval prompts x 20 samples at T=0.8, continuous batching. Also checks that both draw
the same samples (the counter-based row streams make a sample independent of its batch).

    .venv/bin/python benchmarks/engine_cache.py --old 314776a --prompts 8 --tokens 256 --rows 120

History: 1077dec -> in-place decode writes (1.08x); 314776a -> in-place row removal and
admission.
"""
import importlib.util
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import parser  # noqa: E402 - also puts the repository on sys.path
from tempering import envs  # noqa: E402
from tempering.models import load  # noqa: E402
from tempering.rollout import engine as new  # noqa: E402
from tempering.rollout.hf import chat_prompt_ids  # noqa: E402
from tempering.types import SamplingParams  # noqa: E402


def old_engine(rev: str):
    src = subprocess.run(["git", "show", f"{rev}:tempering/rollout/engine.py"], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1]).stdout
    path = Path(f"/tmp/engine_{rev}.py")
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(f"engine_{rev}", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    ap = parser(__doc__, prompts=8, tokens=128, repeats=2)
    ap.add_argument("--old", required=True, help="git revision whose engine to compare against")
    ap.add_argument("--samples", type=int, default=20)
    ap.add_argument("--rows", type=int, default=60, help="rows in flight")
    args = ap.parse_args()
    old = old_engine(args.old)
    m = load("smollm2-135m-instruct")
    m.model.eval()
    tasks = envs.make("code/humaneval-v1").tasks("test", args.prompts)
    params = SamplingParams(temperature=0.8, max_new_tokens=args.tokens, n=args.samples)

    def run(mod):
        e = mod.Engine(m.model, m.tokenizer, params, max_batch=args.rows)
        for i, t in enumerate(tasks):
            e.submit(mod.Request(tuple(chat_prompt_ids(m.tokenizer, t.prompt)), mod.row_seeds(7, i, args.samples),
                                 args.tokens, tag=i))
        t0 = time.perf_counter()
        out = e.run()
        dt = time.perf_counter() - t0
        return dt, sum(len(f.completion.token_ids) for f in out), sorted((f.request.tag, f.sample, f.completion.token_ids)
                                                                          for f in out)

    times = {"old": [], "new": []}
    samples = {}
    for _ in range(args.repeats):
        for name, mod in (("old", old), ("new", new)):
            dt, n, outs = run(mod)
            times[name].append(dt)
            samples[name] = outs
            print(f"{name}: {dt:.1f} s, {n} tokens, {n / dt:.1f} tok/s", flush=True)
    print("median old/new speedup:", round(statistics.median(times["old"]) / statistics.median(times["new"]), 2))
    same = sum(a == b for a, b in zip(samples["old"], samples["new"]))
    print("identical samples:", same, "of", len(samples["new"]))


if __name__ == "__main__":
    main()
