import pytest
import torch

from tempering.errors import ModelNotFoundError
from tempering.models import load, resolve_path
from tempering.rollout import chat_prompt_ids
from tempering.types import Message


def test_tiny_random_is_a_small_llama_with_smollm2_tokenizer(tiny):
    assert tiny.model.config.model_type == "llama" and tiny.model.config.num_hidden_layers == 2
    assert tiny.model.config.vocab_size == len(tiny.tokenizer) == 49152
    ids = chat_prompt_ids(tiny.tokenizer, [Message("user", "hi")])
    text = tiny.tokenizer.decode(ids)
    assert "<|im_start|>user\nhi<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")  # ChatML


def test_any_hf_directory_loads(tiny, tmp_path):
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    again = load(str(tmp_path))
    x = torch.tensor([[1, 2, 3]])
    with torch.no_grad():
        assert torch.equal(again.model(x).logits, tiny.model(x).logits)


def test_missing_model_and_dir_without_config(tmp_path):
    with pytest.raises(ModelNotFoundError, match="neither a preset"):
        resolve_path(str(tmp_path / "missing"))
    with pytest.raises(ModelNotFoundError, match="no config.json"):
        resolve_path(str(tmp_path))


@pytest.mark.slow
def test_smollm2_is_the_real_pretrained_model():
    m = load("smollm2-135m-instruct")
    assert sum(p.numel() for p in m.model.parameters()) == 134_515_008
    assert m.model.config.num_hidden_layers == 30 and m.model.config.tie_word_embeddings
    from tempering.rollout import HFClient
    from tempering.types import SamplingParams

    out = HFClient(m.model, m.tokenizer).generate([[Message("user", "What is the capital of France?")]],
                                                  SamplingParams(temperature=0.0, max_new_tokens=24))
    assert "Paris" in out[0].text  # a random model would not know


def test_device_auto_is_cpu_without_a_gpu_and_a_missing_gpu_is_a_clear_error(monkeypatch):
    from tempering.errors import ConfigError
    from tempering.models import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == "cpu"
    assert resolve_device("cpu") == "cpu"
    with pytest.raises(ConfigError, match="no GPU is visible: set model.device=cpu"):
        resolve_device("cuda")
    with pytest.raises(ConfigError, match="unknown device 'gpu0'"):
        resolve_device("gpu0")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda:1") == "cuda:1"


def test_a_built_tokenizer_is_reused_not_rebuilt(monkeypatch, tmp_path):
    """The tokenizer directory has no config.json: it is found by its own marker file (a
    rebuild needs the GGUF package, which a GPU machine may lack)."""
    from tempering.models import presets

    builds = []

    def fake_build(out):
        builds.append(out)
        (out / "tokenizer_config.json").write_text("{}")

    monkeypatch.setenv("TEMPERING_HOME", str(tmp_path))
    monkeypatch.setattr(presets, "_smollm2_tokenizer", fake_build)
    first = presets.tokenizer_path()
    assert presets.tokenizer_path() == first == tmp_path / "models" / "smollm2-tokenizer"
    assert len(builds) == 1
