"""Side-by-side CPU timings of the two hot paths of a GRPO step, with SmolLM2-135M-Instruct.

1. Training forward+backward of one group (1 prompt x G completions): the prompt computed
   once and its KV cache shared (`group_logprobs`) vs a plain pass over G full sequences.
2. Sampling G completions per prompt: one uniform per row against the cumulative
   distribution (`engine.sample`) vs `torch.multinomial`, inside the real decode loop.

Each pair alternates A, B, A, B... so machine noise hits both; medians and ratios are printed
and written to docs/benchmarks.md's "speed" section by hand. Usage:

    .venv/bin/python benchmarks/speed.py [--repeats 3]
"""

from __future__ import annotations

import statistics
import time

import torch

from _common import parser  # puts the repository on sys.path
from tempering import envs
from tempering.models import load
from tempering.rollout import HFClient, engine
from tempering.trainer.logprobs import full_sequence_logprobs, group_logprobs
from tempering.types import SamplingParams


def time_training(model, repeats: int, group: int = 8, prompt_len: int = 90, completion_len: int = 60) -> dict:
    torch.manual_seed(0)
    prompt = torch.randint(100, 5000, (prompt_len,)).tolist()
    comps = [torch.randint(100, 5000, (completion_len,)).tolist() for _ in range(group)]
    model.train()
    times = {"shared prompt": [], "full sequences": []}
    for _ in range(repeats):
        for name, fn in (("shared prompt", group_logprobs), ("full sequences", full_sequence_logprobs)):
            model.zero_grad()
            t = time.perf_counter()
            out = fn(model, prompt, comps, 0.7)
            (out.logp * out.mask).sum().backward()
            times[name].append(time.perf_counter() - t)
    model.eval()
    return times


def _multinomial_sample(logits, params, u):
    """The textbook sampler, for comparison: torch.multinomial draws per vocabulary entry."""
    logp = torch.log_softmax(logits.float() / params.temperature, dim=-1)
    tokens = torch.multinomial(logp.exp(), 1)[:, 0]
    return tokens, logp.gather(1, tokens[:, None])[:, 0]


def time_sampling(loaded, repeats: int, prompts: int = 8, group: int = 8, new_tokens: int = 48) -> dict:
    env = envs.make("math/arith-v1")
    batch = [t.prompt for t in env.tasks("train", prompts)]
    client = HFClient(loaded.model, loaded.tokenizer, max_batch=prompts * group)
    params = SamplingParams(temperature=0.7, max_new_tokens=new_tokens, n=group, seed=0)
    inverse_cdf = engine.sample
    times = {"inverse CDF": [], "torch.multinomial": []}
    try:
        for _ in range(repeats):
            for name, sampler in (("inverse CDF", inverse_cdf), ("torch.multinomial", _multinomial_sample)):
                engine.sample = sampler
                t = time.perf_counter()
                client.generate(batch, params)
                times[name].append(time.perf_counter() - t)
    finally:
        engine.sample = inverse_cdf
    return times


def report(title: str, times: dict) -> None:
    names = list(times)
    med = {k: statistics.median(times[k]) for k in names}
    print(f"\n{title}")
    for k in names:
        print(f"  {k:24s} median {med[k]:6.2f} s  runs {[round(x, 2) for x in times[k]]}")
    print(f"  ratio {names[1]} / {names[0]}: {med[names[1]] / med[names[0]]:.2f}x")


def main() -> None:
    ap = parser(__doc__, repeats=3)
    args = ap.parse_args()
    loaded = load("smollm2-135m-instruct")
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads")
    report("training forward+backward, 1 prompt (90 tok) x 8 completions (60 tok)", time_training(loaded.model, args.repeats))
    report("sampling 8 prompts x 8 completions, 48 new tokens, T=0.7", time_sampling(loaded, args.repeats))


if __name__ == "__main__":
    main()
