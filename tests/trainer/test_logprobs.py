import torch

from tempering.trainer.logprobs import full_sequence_logprobs, group_logprobs


def test_shared_prompt_pass_equals_full_sequence_pass_in_values_and_gradients(tiny):
    model = tiny.model
    prompt = list(range(300, 320))
    completions = [[5, 6, 7, 8, 9], [10, 11], [12, 13, 14, 15, 16], [17]]

    def grads(fn):
        model.zero_grad()
        out = fn(model, prompt, completions, temperature=0.7)
        (out.logp * out.mask).sum().backward()
        return out, [p.grad.clone() for p in model.parameters() if p.grad is not None]

    shared, g_shared = grads(group_logprobs)
    full, g_full = grads(full_sequence_logprobs)
    model.zero_grad()
    assert torch.equal(shared.mask, full.mask)
    assert torch.allclose(shared.logp * shared.mask, full.logp * full.mask, atol=1e-5)
    for a, b in zip(g_shared, g_full):
        assert (a - b).abs().max() <= 1e-4 * b.abs().max()  # fp32 summation-order noise only
    assert shared.mask.sum().item() == sum(len(c) for c in completions)
