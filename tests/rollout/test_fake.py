"""The client protocols and the scripted client that stands in for a model in tests."""

from __future__ import annotations

import pytest

from tempering.rollout import HFClient
from tempering.rollout.base import InferenceClient, StreamingClient, TokenClient
from tempering.rollout.fake import ScriptedClient
from tempering.types import Message, SamplingParams


def test_the_real_client_streams_and_the_scripted_one_does_not(tiny):
    real, fake = HFClient(tiny.model, tiny.tokenizer), ScriptedClient(tiny.tokenizer, ["x"])
    assert isinstance(real, StreamingClient)
    assert isinstance(fake, TokenClient) and isinstance(fake, InferenceClient) and not isinstance(fake, StreamingClient)


def test_replies_come_in_order_tokenized_and_clipped(tiny):
    tok = tiny.tokenizer
    client = ScriptedClient(tok, ["first reply", "second"], cut={1})
    out = client.generate([[Message("user", "a")], [Message("user", "b")]], SamplingParams(max_new_tokens=64))
    assert [c.text for c in out] == ["first reply", "second"]
    assert tok.decode(list(out[0].token_ids)) == "first reply<|im_end|>"
    assert tok.decode(list(out[1].token_ids)) == "second"  # cut: no end-of-turn token
    assert len(client.prompts) == 2 and client.prompts[0] != client.prompts[1]
    clipped = ScriptedClient(tok, ["a much longer reply than two tokens"]).generate_ids([[1]], SamplingParams(max_new_tokens=2))
    assert len(clipped[0].token_ids) == 2
    with pytest.raises(AssertionError, match="only 2 replies"):
        client.generate_ids([[1]], SamplingParams())
    stuck = ScriptedClient(tok, ["again"], repeat_last=True)
    assert [c.text for c in stuck.generate_ids([[1], [2], [3]], SamplingParams())] == ["again"] * 3
