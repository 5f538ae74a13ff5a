"""GPU timings of Tempering's two hot paths in bf16, with random weights of real shapes.

Real weights cannot reach the GPU machines (nothing can be fetched there, and the 135M
checkpoint alone is larger than what travels), so each model is built from its config with
random weights: decode and training time depend on the shapes, not the values. Random
weights never emit EOS, so every sample runs to the full token budget.

    smollm2-135m   SmolLM2-135M-Instruct's config (30 layers, d 576, GQA 9/3, vocab 49152)
    llama-1b       a Llama-3.2-1B-shaped model with SmolLM2's vocabulary (16 layers, d 2048,
                   GQA 32/8, MLP 8192): 1.07 B parameters

Measured, per model:
1. Generation: Tempering's continuous-batching engine (`HFClient.generate_ids`), and vLLM in
   the same process where it is installed (the CUDA wheel; one sync, its check), P prompts of
   128 tokens x 8 samples, 256 new tokens each, T = 1.0. Tokens/s counts generated tokens.
   Model FLOP utilisation counts 2N FLOPs per generated token (weights only, attention left
   out), against the H200's dense bf16 peak (989 TFLOP/s, datasheet); decode is bound by
   memory, so the weight bytes read per decode step over the step time are shown too.
2. Training: one optimiser step of the GRPO loss over G groups (1 prompt of 128 tokens x 8
   completions of 256 tokens each, the prompt's KV shared: `group_logprobs`), AdamW, bf16
   weights. MFU counts 6N FLOPs per trained token plus the causal attention term.

Each figure is the median of --repeats timed runs after one warm-up. Usage (on a GPU):

    python benchmarks/gpu.py [--models smollm2-135m,llama-1b] [--repeats 3] [--out runs/bench-gpu.json]
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch

from _common import parser  # noqa: E402 - also puts the repository on sys.path

from tempering.algorithms.losses import Norm, policy_loss  # noqa: E402
from tempering.models.loader import LoadedModel, resolve_device  # noqa: E402
from tempering.models.presets import tokenizer_path  # noqa: E402
from tempering.rollout import HFClient  # noqa: E402
from tempering.trainer.logprobs import group_logprobs  # noqa: E402
from tempering.types import SamplingParams  # noqa: E402

PEAK_BF16 = 989e12  # H200 SXM dense bf16, datasheet
ARCHS = {
    "smollm2-135m": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, head_dim=64, rope_theta=100000.0),
    "llama-1b": dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=16, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=64, rope_theta=500000.0),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16, rope_theta=10000.0),  # for a CPU smoke run
}


def random_model(arch: str, dtype: str = "bfloat16", device: str = "auto") -> LoadedModel:
    """A LlamaForCausalLM of `arch`'s shape with random weights (seed 0) and SmolLM2's tokenizer."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_path())
    shape = dict(ARCHS[arch])
    theta = shape.pop("rope_theta")
    config = LlamaConfig(vocab_size=len(tok), max_position_embeddings=8192, tie_word_embeddings=True,
                         rope_parameters={"rope_type": "default", "rope_theta": theta}, bos_token_id=tok.bos_token_id,
                         eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **shape)
    torch.manual_seed(0)
    device = resolve_device(device)
    with torch.device(device):
        model = LlamaForCausalLM(config).to(getattr(torch, dtype))
    model.eval()
    return LoadedModel(model=model, tokenizer=tok, name=f"random:{arch}", path=Path("."))


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def time_generation(loaded: LoadedModel, prompts: int, repeats: int, samples: int = 8, prompt_len: int = 128,
                    new_tokens: int = 256) -> dict:
    g = torch.Generator().manual_seed(1)
    ids = [torch.randint(100, 40000, (prompt_len,), generator=g).tolist() for _ in range(prompts)]
    client = HFClient(loaded.model, loaded.tokenizer, max_batch=prompts * samples)
    params = SamplingParams(temperature=1.0, max_new_tokens=new_tokens, n=samples, seed=0)
    client.generate_ids(ids[:2], SamplingParams(temperature=1.0, max_new_tokens=8, n=2, seed=0))  # warm-up
    times, tokens = [], 0
    for _ in range(repeats):
        _sync()
        t = time.perf_counter()
        out = client.generate_ids(ids, params)
        _sync()
        times.append(time.perf_counter() - t)
        tokens = sum(len(c.token_ids) for c in out)
    return {"rows": prompts * samples, "tokens": tokens, "seconds": times, "tok_s": tokens / statistics.median(times)}


def time_generation_vllm(loaded: LoadedModel, prompts: int, repeats: int, samples: int = 8, prompt_len: int = 128,
                         new_tokens: int = 256) -> dict | None:
    """Item 1 again on vLLM (in this process, bf16), the same prompts and seeds, with the weight
    sync's time and its check; None where vLLM is not installed."""
    import importlib.util
    import tempfile

    if importlib.util.find_spec("vllm") is None:
        return None
    from tempering.rollout.vllm_client import VLLMClient

    with tempfile.TemporaryDirectory() as d:
        loaded.model.save_pretrained(d)
        loaded.tokenizer.save_pretrained(d)
        client = VLLMClient(d, loaded.tokenizer, dtype="bfloat16", max_batch=prompts * samples, kv_cache_gib=8,
                            device=str(loaded.model.device))
        sync = client.sync(loaded.model)
        g = torch.Generator().manual_seed(1)
        ids = [torch.randint(100, 40000, (prompt_len,), generator=g).tolist() for _ in range(prompts)]
        params = SamplingParams(temperature=1.0, max_new_tokens=new_tokens, n=samples, seed=0)
        client.generate_ids(ids[:2], SamplingParams(temperature=1.0, max_new_tokens=8, n=2, seed=0))  # warm-up
        times, tokens = [], 0
        for _ in range(repeats):
            t = time.perf_counter()
            out = client.generate_ids(ids, params)
            times.append(time.perf_counter() - t)
            tokens = sum(len(c.token_ids) for c in out)
        client.close()
    return {"rows": prompts * samples, "tokens": tokens, "seconds": times, "tok_s": tokens / statistics.median(times),
            "sync_s": sync.seconds, "sync_ok": sync.ok, "probe_diff_max": sync.diff_max}


def time_training(loaded: LoadedModel, groups: int, repeats: int, group: int = 8, prompt_len: int = 128,
                  completion_len: int = 256) -> dict:
    model = loaded.model
    g = torch.Generator().manual_seed(2)
    batch = [(torch.randint(100, 40000, (prompt_len,), generator=g).tolist(),
              [torch.randint(100, 40000, (completion_len,), generator=g).tolist() for _ in range(group)])
             for _ in range(groups)]
    adv = torch.randn(groups, group, generator=g).to(model.device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6, betas=(0.9, 0.99))
    norm = Norm(tokens=float(groups * group * completion_len), sequences=float(groups * group))
    model.train()
    times = []
    for rep in range(repeats + 1):
        _sync()
        t = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        for i, (prompt, comps) in enumerate(batch):
            lp = group_logprobs(model, prompt, comps, 1.0)
            out = policy_loss(lp.logp, lp.logp.detach(), adv[i], lp.mask, norm=norm)
            out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        _sync()
        if rep:  # the first is the warm-up
            times.append(time.perf_counter() - t)
    model.eval()
    del optimizer
    return {"groups": groups, "tokens": groups * group * completion_len, "prompt_tokens": groups * prompt_len,
            "seconds": times}


def main() -> None:
    ap = parser(__doc__, tokens=(256, "new tokens per sample / completion length"), repeats=3, device="auto", out="runs/bench-gpu.json")
    ap.add_argument("--prompts", default="8,32", help="prompt counts for generation (x 8 samples each)")
    ap.add_argument("--models", default="smollm2-135m,llama-1b")
    ap.add_argument("--groups", type=int, default=16, help="groups per training step")
    args = ap.parse_args()
    device = resolve_device(args.device)
    name = torch.cuda.get_device_name() if device.startswith("cuda") else "cpu"
    print(f"torch {torch.__version__} on {name}; bf16, random weights; median of {args.repeats} after a warm-up")
    results = {}
    rows = []
    for arch in args.models.split(","):
        loaded = random_model(arch, "bfloat16", device)
        m = loaded.model
        n = sum(p.numel() for p in m.parameters())
        c = m.config
        res = {"params": n, "generation": [], "training": None}
        for p in (int(x) for x in args.prompts.split(",")):
            gen = time_generation(loaded, p, args.repeats, new_tokens=args.tokens)
            step = statistics.median(gen["seconds"]) / args.tokens  # seconds per decode step (all rows)
            gen["mfu"] = 2 * n * gen["tok_s"] / PEAK_BF16
            gen["weight_gb_s"] = 2 * n / step / 1e9  # bf16 weights read once per decode step
            res["generation"].append(gen)
            rows.append(f"{arch:13s} generate  {gen['rows']:4d} rows x {args.tokens} tok  {gen['tok_s']:10.0f} tok/s   "
                        f"MFU {gen['mfu']:6.2%}   weights read {gen['weight_gb_s']:7.0f} GB/s")
            print(rows[-1], flush=True)
            vl = time_generation_vllm(loaded, p, args.repeats, new_tokens=args.tokens)
            if vl is None:
                print(f"{arch:13s} vllm      not installed on this machine: hf timed alone", flush=True)
            else:
                res.setdefault("generation_vllm", []).append(vl)
                rows.append(f"{arch:13s} vllm      {vl['rows']:4d} rows x {args.tokens} tok  {vl['tok_s']:10.0f} tok/s   "
                            f"x hf {vl['tok_s'] / gen['tok_s']:5.2f}   sync {vl['sync_s']:.2f} s ok {vl['sync_ok']}")
                print(rows[-1], flush=True)
        tr = time_training(loaded, args.groups, args.repeats, completion_len=args.tokens)
        sec = statistics.median(tr["seconds"])
        seq = 128 + args.tokens
        attn = 6 * c.num_hidden_layers * c.hidden_size * seq  # causal attention, per trained token (fwd+bwd)
        tr["mfu"] = (6 * n + attn) * tr["tokens"] / sec / PEAK_BF16
        tr["step_s"] = sec
        res["training"] = tr
        rows.append(f"{arch:13s} train     {args.groups} groups x 8 x {args.tokens} tok  step {sec:7.3f} s  "
                    f"{tr['tokens'] / sec:10.0f} tok/s   MFU {tr['mfu']:6.2%}")
        print(rows[-1], flush=True)
        if device.startswith("cuda"):
            res["peak_memory_gb"] = torch.cuda.max_memory_allocated() / 1e9
            torch.cuda.reset_peak_memory_stats()
        results[arch] = res
        del loaded, m
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    print("\n" + "\n".join(rows))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps({"device": name, "torch": torch.__version__, "args": vars(args),
                                          "results": results}, indent=1))


if __name__ == "__main__":
    main()
