import torch

from tempering.rollout import HFClient, chat_prompt_ids
from tempering.types import Message, SamplingParams

PROMPTS = [[Message("user", "What is 2+2?")], [Message("user", "Name a colour and then stop.")]]


def _full_logprobs(model, prompt_ids, token_ids, temperature):
    ids = torch.tensor([list(prompt_ids) + list(token_ids)])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt_ids) - 1 : -1].float()
    logits = logits / temperature if temperature > 0 else logits
    return torch.log_softmax(logits, -1).gather(1, torch.tensor(token_ids)[:, None])[:, 0]


def test_groups_are_prompt_major_and_logprobs_match_a_full_forward(tiny):
    client = HFClient(tiny.model, tiny.tokenizer)
    out = client.generate(PROMPTS, SamplingParams(temperature=0.7, max_new_tokens=12, n=3, seed=0))
    assert len(out) == 6
    for i, c in enumerate(out):
        assert list(c.prompt_ids) == chat_prompt_ids(tiny.tokenizer, PROMPTS[i // 3])
        assert len(c.token_ids) == len(c.logprobs) and 0 < len(c.token_ids) <= 12
        ref = _full_logprobs(tiny.model, c.prompt_ids, c.token_ids, 0.7)
        assert torch.allclose(ref, torch.tensor(c.logprobs), atol=1e-4)
        assert c.finish_reason in ("stop", "length")


def test_seed_reproduces_and_samples_differ(tiny):
    client = HFClient(tiny.model, tiny.tokenizer)
    params = SamplingParams(temperature=1.0, max_new_tokens=10, n=4, seed=1)
    a, b = client.generate(PROMPTS[:1], params), client.generate(PROMPTS[:1], params)
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    assert len({c.token_ids for c in a}) > 1  # a random model at T=1 does not repeat itself


def test_greedy_matches_argmax_and_batching_does_not_change_it(tiny):
    client = HFClient(tiny.model, tiny.tokenizer, max_batch=1)
    alone = client.generate(PROMPTS, SamplingParams(temperature=0.0, max_new_tokens=8))
    batched = HFClient(tiny.model, tiny.tokenizer, max_batch=8).generate(PROMPTS, SamplingParams(temperature=0.0, max_new_tokens=8))
    assert [c.token_ids for c in alone] == [c.token_ids for c in batched]  # left padding is masked out
    c = alone[0]
    with torch.no_grad():
        first = tiny.model(torch.tensor([list(c.prompt_ids)])).logits[0, -1].argmax().item()
    assert c.token_ids[0] == first


def test_stop_string_ends_generation_and_is_cut_from_text(tiny):
    client = HFClient(tiny.model, tiny.tokenizer)
    free = client.generate(PROMPTS[:1], SamplingParams(temperature=0.0, max_new_tokens=20))[0]
    stop = free.text[3:6]
    assert stop and stop in free.text
    cut = client.generate(PROMPTS[:1], SamplingParams(temperature=0.0, max_new_tokens=20, stop=(stop,)))[0]
    assert cut.finish_reason == "stop" and stop not in cut.text
    assert len(cut.token_ids) < len(free.token_ids)


def test_top_p_tiny_keeps_only_the_top_token(tiny):
    client = HFClient(tiny.model, tiny.tokenizer)
    greedy = client.generate(PROMPTS[:1], SamplingParams(temperature=0.0, max_new_tokens=6))[0]
    nucleus = client.generate(PROMPTS[:1], SamplingParams(temperature=1.0, top_p=1e-6, max_new_tokens=6, n=2, seed=3))
    assert all(c.token_ids == greedy.token_ids for c in nucleus)
