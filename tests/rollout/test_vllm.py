"""The vLLM client against the TokenClient contract on tiny-random, its weight sync and the
check that catches a missed one, the sampler correction, and the engine choice (auto's
fallback, vllm's error). One engine per xdist worker (they take seconds to start)."""

from __future__ import annotations

import importlib.util

import pytest
import torch

from tempering.errors import ConfigError
from tempering.rollout import HFClient
from tempering.rollout.engines import make_client, resolve_engine
from tempering.types import Message, SamplingParams

needs_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None,
                                reason="vLLM is not installed (make setup installs it)")
pytestmark = pytest.mark.xdist_group("vllm")


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """A fresh tiny-random policy (its own copy: tests change its weights) and a vLLM client over it."""
    from tempering.models import load
    from tempering.rollout.vllm_client import VLLMClient

    loaded = load("tiny-random")
    client = VLLMClient(loaded.path, loaded.tokenizer, max_batch=16, kv_cache_gib=0.25,
                        cache_dir=tmp_path_factory.mktemp("vllm-cache"))
    yield loaded, client
    client.close()


PROMPTS = [[Message("user", f"What is {i} + {3 * i}?")] for i in range(6)]


@needs_vllm
def test_greedy_fp32_tokens_and_logprobs_equal_hfclients(engine):
    loaded, client = engine
    client.sync(loaded.model)
    params = SamplingParams(temperature=0, max_new_tokens=12)
    ours, theirs = HFClient(loaded.model, loaded.tokenizer).generate(PROMPTS, params), client.generate(PROMPTS, params)
    assert [c.token_ids for c in theirs] == [c.token_ids for c in ours]
    assert [c.text for c in theirs] == [c.text for c in ours]
    for a, b in zip(ours, theirs):
        assert len(b.logprobs) == len(b.token_ids) and b.prompt_ids == a.prompt_ids
        assert max(abs(x - y) for x, y in zip(a.logprobs, b.logprobs)) < 1e-4


@needs_vllm
def test_samples_are_prompt_major_and_fixed_by_their_seeds_not_their_batch(engine):
    loaded, client = engine
    params = SamplingParams(temperature=1.0, max_new_tokens=10, n=3, seed=7)
    ids = [client.tokenizer.apply_chat_template([m.as_dict() for m in p], add_generation_prompt=True,
                                                tokenize=True, return_dict=False) for p in PROMPTS]
    alone = client.generate_ids(ids[:2], params)
    crowded = client.generate_ids(ids, params)
    assert len(alone) == 6 and len(crowded) == 18
    assert [c.token_ids for c in crowded[:6]] == [c.token_ids for c in alone]
    assert all(c.prompt_ids == tuple(ids[i // 3]) for i, c in enumerate(crowded))
    assert len({c.token_ids for c in crowded[:3]}) > 1  # the group's samples differ from each other
    seeds = [[11, 12, 13], [11, 12, 13]]
    twin = client.generate_ids([ids[0], ids[0]], params, seeds=seeds)
    assert [c.token_ids for c in twin[:3]] == [c.token_ids for c in twin[3:]]


@needs_vllm
def test_sampled_logprobs_are_the_trainers_at_the_sampling_temperature(engine):
    from tempering.trainer.logprobs import group_logprobs

    loaded, client = engine
    client.sync(loaded.model)
    comps = client.generate(PROMPTS[:1], SamplingParams(temperature=0.7, max_new_tokens=12, n=4, seed=1))
    lp = group_logprobs(loaded.model, comps[0].prompt_ids, [c.token_ids for c in comps], 0.7, 0).logp
    for i, c in enumerate(comps):
        assert torch.allclose(lp[i, :len(c.logprobs)], torch.tensor(c.logprobs), atol=1e-4)


@needs_vllm
def test_a_sync_is_proved_and_a_skipped_one_is_caught(engine, monkeypatch):
    from tempering.trainer.alerts import _sync

    loaded, client = engine
    assert client.sync(loaded.model).ok
    with torch.no_grad():  # what one optimiser step does: every tensor moves a little
        for p in loaded.model.parameters():
            p.add_(1e-3 * torch.randn_like(p))
    worker = client.llm.llm_engine.model_executor.driver_worker.worker
    monkeypatch.setattr(worker, "reload_weights", lambda **kw: None)  # the sync silently does nothing
    missed = client.sync(loaded.model)
    assert not missed.ok and missed.tensors_unequal and missed.diff_max > 1e-3
    assert "not sampling from the trained weights" in _sync([missed.metrics()], None)
    monkeypatch.undo()
    good = client.sync(loaded.model)
    assert good.ok and good.tensors_checked > 0 and not good.tensors_unequal and good.diff_max < 2e-3
    assert _sync([good.metrics()], None) is None


@needs_vllm
def test_multi_turn_episodes_run_on_the_streaming_engine(engine, shared_sandbox):
    from tempering import envs
    from tempering.rollout import Budget, run_episodes

    loaded, client = engine
    env = envs.make("code/repair-v1")
    tasks = env.tasks("test", 2)
    params = SamplingParams(temperature=1.0, max_new_tokens=16, seed=3)
    for overlap in (False, True):
        trajs = run_episodes(lambda: envs.make("code/repair-v1"), tasks, client, params, Budget(max_turns=2),
                             overlap=overlap)
        assert len(trajs) == 2
        for t in trajs:
            assert len(t.turns) >= 1 and len(t.logprobs) == len(t.token_ids) == len(t.loss_mask)
            assert 0 < sum(t.loss_mask) < len(t.loss_mask) - t.prompt_len  # feedback tokens carry no loss
            if len(t.turns) > 1:
                assert any(lp == 0.0 for lp, m in zip(t.logprobs[t.prompt_len:], t.loss_mask[t.prompt_len:]) if not m)


def test_the_engine_choice_falls_back_with_one_line_or_refuses(monkeypatch, capsys, tiny):
    import tempering.rollout.vllm_client as vc

    assert resolve_engine("hf", tiny.path) == "hf"
    with pytest.raises(ConfigError, match="unknown rollout.engine 'vlm'"):
        resolve_engine("vlm", tiny.path)
    monkeypatch.setattr(vc, "unavailable", lambda path, device="cpu": "vLLM is not installed (make setup installs it)")
    assert resolve_engine("auto", tiny.path) == "hf"
    assert capsys.readouterr().out.strip() == "rollout.engine auto: sampling with hf (vLLM is not installed (make setup installs it))"
    with pytest.raises(ConfigError, match="rollout.engine is vllm but vLLM is not installed.*set rollout.engine=hf"):
        make_client("vllm", tiny.model, tiny.tokenizer, tiny.path)
    assert isinstance(make_client("auto", tiny.model, tiny.tokenizer, tiny.path), HFClient)


def test_a_model_vllm_has_no_kernel_for_is_named(tmp_path):
    import json

    from tempering.rollout.vllm_client import unavailable

    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 64,
                                                      "num_attention_heads": 4}))
    why = unavailable(tmp_path)
    if importlib.util.find_spec("vllm") is not None:
        assert why == "vLLM's CPU attention has no kernel for head size 16"
    else:
        assert why.startswith("vLLM is not installed")
