"""The engine's KV cache, side by side: preallocated layers that write each decode step in
place (`engine._RoomyLayer`) vs the previous engine, whose DynamicLayer concatenated the
whole cache every step. SmolLM2-135M-Instruct, 8 HumanEval prompts x 20 samples at T=0.8,
128 new tokens, 60 rows in flight (continuous batching). Alternating runs; checks that both
draw identical samples. Usage (OLD is a copy of the previous engine module):

    git show 1077dec:tempering/rollout/engine.py > /tmp/engine_old.py
    .venv/bin/python benchmarks/engine_cache.py
"""
import importlib.util, sys, time, statistics
sys.path.insert(0, "/work/main")
from tempering import envs
from tempering.models import load
from tempering.rollout.hf import chat_prompt_ids
from tempering.rollout import engine as new
from tempering.types import SamplingParams
spec = importlib.util.spec_from_file_location("engine_old", "/tmp/engine_old.py"); old = importlib.util.module_from_spec(spec); sys.modules["engine_old"] = old; spec.loader.exec_module(old)
m = load("smollm2-135m-instruct"); m.model.eval()
tasks = envs.make("code/humaneval-v1").tasks("test", 8)
params = SamplingParams(temperature=0.8, max_new_tokens=128, n=20)
def run(mod):
    e = mod.Engine(m.model, m.tokenizer, params, max_batch=60)
    for i, t in enumerate(tasks):
        e.submit(mod.Request(tuple(chat_prompt_ids(m.tokenizer, t.prompt)), mod.row_seeds(7, i, 20), 128, tag=i))
    t0 = time.perf_counter(); out = e.run(); dt = time.perf_counter() - t0
    return dt, sum(len(f.completion.token_ids) for f in out), sorted((f.request.tag, f.sample, f.completion.token_ids) for f in out)
res = {"old": [], "new": []}; toks = {}
for rep in range(2):
    for name, mod in (("old", old), ("new", new)):
        dt, n, outs = run(mod); res[name].append(dt); toks[name] = outs
        print(name, round(dt, 1), "s", n, "tokens", round(n / dt, 1), "tok/s", flush=True)
print("median old/new speedup:", round(statistics.median(res["old"]) / statistics.median(res["new"]), 2))
same = sum(a == b for a, b in zip(toks["old"], toks["new"])); print("identical samples:", same, "of", len(toks["new"]))
