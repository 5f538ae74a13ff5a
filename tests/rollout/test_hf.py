import torch

from tempering.rollout import HFClient, chat_prompt_ids
from tempering.rollout.engine import row_seeds as engine_seeds
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


def test_a_sample_does_not_depend_on_what_shares_its_batch(tiny):
    """Each row draws from its own seeded stream, so batch width and admission order do not
    change what it samples (continuous batching, sharding across workers)."""
    params = SamplingParams(temperature=1.0, max_new_tokens=10, n=3, seed=5)
    wide = HFClient(tiny.model, tiny.tokenizer, max_batch=16).generate(PROMPTS, params)
    narrow = HFClient(tiny.model, tiny.tokenizer, max_batch=2).generate(PROMPTS, params)  # rows join as others stop
    assert [c.token_ids for c in wide] == [c.token_ids for c in narrow]
    alone = HFClient(tiny.model, tiny.tokenizer).generate_ids(
        [wide[3].prompt_ids], params, seeds=[engine_seeds(5, 1, 3)])
    assert [c.token_ids for c in alone] == [c.token_ids for c in wide[3:]]


def test_rows_admitted_mid_decode_match_a_full_forward(tiny):
    """A request that joins a running batch (left-padded into its cache) gets the same
    log-probs as a plain forward pass over its tokens."""
    from tempering.rollout.engine import Engine, Request

    eng = Engine(tiny.model, tiny.tokenizer, SamplingParams(temperature=0.8, max_new_tokens=9), max_batch=8)
    long_prompt = chat_prompt_ids(tiny.tokenizer, [Message("user", "Tell me a long story about " + "cats " * 30)])
    eng.submit(Request(tuple(chat_prompt_ids(tiny.tokenizer, PROMPTS[0])), (1, 2), 9, tag="a"))
    done = eng.step() + eng.step() + eng.step()
    eng.submit(Request(tuple(long_prompt), (3,), 9, tag="b"))  # longer than the running cache
    done += eng.run()
    assert sorted(f.request.tag for f in done) == ["a", "a", "b"]
    for f in done:
        c = f.completion
        ref = _full_logprobs(tiny.model, c.prompt_ids, c.token_ids, 0.8)
        assert torch.allclose(ref, torch.tensor(c.logprobs), atol=1e-4)
    assert eng.tokens == sum(len(f.completion.token_ids) for f in done)


def test_rows_that_stop_at_different_steps_are_replaced_in_place(tiny):
    """Finished rows are overwritten by live rows from the end of the batch, and waiting
    requests (shorter than the running cache) are written into the freed rows: every
    completion still matches a plain forward pass, and the batch never exceeds its width."""
    from tempering.rollout.engine import Engine, Request

    eng = Engine(tiny.model, tiny.tokenizer, SamplingParams(temperature=1.0, max_new_tokens=12), max_batch=5)
    prompts = [chat_prompt_ids(tiny.tokenizer, p) for p in PROMPTS]
    for i, lengths in enumerate([(3, 12, 5), (7, 2), (4,), (9, 1, 6)]):
        ids = prompts[i % len(prompts)]
        for j, n in enumerate(lengths):  # one request per length: rows stop at different steps
            eng.submit(Request(tuple(ids), (100 * i + j,), n, tag=(i, j, n)))
    done, widest = [], 0
    while eng.busy:
        done += eng.step()
        widest = max(widest, len(eng.rows))
        if eng.rows:
            assert eng.cache.layers[0].keys.shape[0] == len(eng.rows)
    assert widest == 5
    assert sorted(f.request.tag for f in done) == sorted(r for r in [
        (i, j, n) for i, ls in enumerate([(3, 12, 5), (7, 2), (4,), (9, 1, 6)]) for j, n in enumerate(ls)])
    for f in done:
        c = f.completion
        assert len(c.token_ids) == f.request.tag[2] or c.finish_reason == "stop"
        ref = _full_logprobs(tiny.model, c.prompt_ids, c.token_ids, 1.0)
        assert torch.allclose(ref, torch.tensor(c.logprobs), atol=1e-4)
