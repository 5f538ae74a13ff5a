"""Resolve a model name to a local HF directory and load it. Never touches a hub."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase  # noqa: E402
from transformers.utils import logging as hf_logging  # noqa: E402

from tempering import storage  # noqa: E402
from tempering.errors import ConfigError, ModelNotFoundError  # noqa: E402
from tempering.models import presets  # noqa: E402


@dataclass
class LoadedModel:
    """A causal LM with its tokenizer and where it came from."""

    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    name: str
    path: Path


def resolve_path(name: str) -> Path:
    """Local directory holding `name`: a preset (built once, cached), an HF model dir, or a URL
    (a published checkpoint, a run's newest, or a model folder: tempering.storage.fetch_model)."""
    if name in presets.PRESETS:
        return presets.PRESETS[name]()
    if storage.is_remote(name):
        return storage.fetch_model(name, presets.cache_dir() / "remote-models")
    path = Path(name).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        return path
    if path.is_dir():
        raise ModelNotFoundError(
            f"model directory {name!r} has no config.json: point --model at a Hugging Face model "
            "directory (one written by save_pretrained) or use a preset: " + ", ".join(presets.PRESETS)
        )
    raise ModelNotFoundError(
        f"model {name!r} not found: it is neither a preset ({', '.join(presets.PRESETS)}) "
        "nor an existing Hugging Face model directory"
    )


def resolve_device(device: str = "auto") -> str:
    """The device to load onto: `auto` is cuda when a GPU is visible, else cpu; any other
    name is checked (a known device type, and a GPU present for cuda) and returned."""
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    try:
        kind = torch.device(device).type
    except RuntimeError as e:
        raise ConfigError(f"unknown device {device!r}: use auto, cpu, cuda or cuda:N") from e
    if kind == "cuda" and not torch.cuda.is_available():
        raise ConfigError(f"model.device is {device!r} but no GPU is visible: set model.device=cpu (or auto)")
    return device


def load(name: str, dtype: str = "float32", device: str = "cpu", kind: str = "causal") -> LoadedModel:
    """Load a preset or HF directory as (model, tokenizer), in eval mode on `device`.

    kind "causal" is the language model; "reward" is the same weights with a scalar head
    (AutoModelForSequenceClassification, one label) scoring the last real token: a reward
    model, newly headed when `name` is a plain language model.
    """
    path = resolve_path(name)
    device = resolve_device(device)
    hf_logging.disable_progress_bar()  # loading takes under a second; its bar is noise
    torch_dtype = getattr(torch, dtype, None)
    if not isinstance(torch_dtype, torch.dtype):
        raise ModelNotFoundError(f"unknown dtype {dtype!r}: use float32, bfloat16 or float16")
    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if kind == "reward":
        from transformers import AutoModelForSequenceClassification

        level = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # a language model's weights have no score head yet: expected, not news
        try:
            model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, dtype=torch_dtype,
                                                                       pad_token_id=tokenizer.pad_token_id).to(device)
        finally:
            hf_logging.set_verbosity(level)
    else:
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype).to(device)
    model.eval()
    return LoadedModel(model=model, tokenizer=tokenizer, name=name, path=path)
