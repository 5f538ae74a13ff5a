"""Which engine samples: `rollout.engine` (hf, vllm or auto) made into a TokenClient.

    hf     HFClient: Tempering's own decode loop over the policy's weights; bitwise
           deterministic, nothing to sync (it samples from the trainer's own tensors).
    vllm   VLLMClient: vLLM in this process, loaded from the model's directory and then
           given the policy's weights (so a resumed or fine-tuned policy is what samples);
           the caller syncs after every optimiser step. Missing or unable: one clear error.
    auto   vllm where it is installed and supports the model on this device, else hf,
           with one line saying why.
"""

from __future__ import annotations

import logging
from pathlib import Path

from tempering.errors import ConfigError
from tempering.rollout.hf import HFClient

ENGINES = ("hf", "vllm", "auto")
log = logging.getLogger("tempering.rollout")


def resolve_engine(engine: str, model_path: str | Path | None, device: str = "cpu") -> str:
    """`hf` or `vllm` for a configured engine name; auto falls back with one line, vllm
    that cannot run is one ConfigError naming the reason and the fix."""
    if engine not in ENGINES:
        raise ConfigError(f"unknown rollout.engine {engine!r}: use one of {', '.join(ENGINES)}")
    if engine == "hf":
        return "hf"
    from tempering.rollout.vllm_client import unavailable

    why = unavailable(model_path, device)
    if why is None:
        return "vllm"
    if engine == "vllm":
        raise ConfigError(f"rollout.engine is vllm but {why}: set rollout.engine=hf (or auto)")
    print(f"rollout.engine auto: sampling with hf ({why})", flush=True)
    return "hf"


def make_client(engine: str, model, tokenizer, model_path: str | Path | None, max_batch: int = 64,
                dtype: str | None = None, kv_cache_gib: float = 2.0, seed: int = 0, cache_dir: str | Path | None = None):
    """A TokenClient over `model` sampled by `engine` (hf, vllm or auto). For vllm, the engine
    is built from `model_path` and then given `model`'s weights; `dtype` is its weights' dtype
    (default: the model's)."""
    device = str(next(model.parameters()).device)
    if resolve_engine(engine, model_path, device) == "hf":
        return HFClient(model, tokenizer, max_batch=max_batch)
    from tempering.rollout.vllm_client import VLLMClient

    dtype = dtype or str(next(model.parameters()).dtype).removeprefix("torch.")
    client = VLLMClient(model_path, tokenizer, dtype=dtype, max_batch=max_batch, kv_cache_gib=kv_cache_gib,
                        seed=seed, device=device, cache_dir=cache_dir)
    client.sync_weights(model)
    return client
