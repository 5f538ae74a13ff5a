"""Per-token log-probs of completions under a model, for the loss and the reference.

A GRPO group is one prompt with G completions. The prompt is run once and its KV cache is
repeated across the group, so the prompt is not recomputed G times; gradients still flow
through the shared prompt activations. `full_sequence_logprobs` is the plain reference
implementation the shared version is tested against.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch
from transformers import DynamicCache, PreTrainedModel


@dataclass
class GroupLogprobs:
    logp: torch.Tensor     # (G, C) log-prob of each completion token
    mask: torch.Tensor     # (G, C) 1 on real completion tokens, 0 on right padding
    entropy: torch.Tensor  # (G, C) entropy of the next-token distribution (detached unless asked)


def _pad(completions: Sequence[Sequence[int]], pad_id: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(1, max(len(c) for c in completions))
    ids = torch.full((len(completions), width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((len(completions), width), dtype=torch.float32, device=device)
    for i, c in enumerate(completions):
        ids[i, : len(c)] = torch.tensor(c, dtype=torch.long)
        mask[i, : len(c)] = 1.0
    return ids, mask


def _gather(logits: torch.Tensor, ids: torch.Tensor, temperature: float,
            entropy_grad: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    logits = logits.float()
    if temperature > 0:
        logits = logits / temperature
    logp_all = torch.log_softmax(logits, dim=-1)  # (G, C, V)
    with torch.set_grad_enabled(entropy_grad and torch.is_grad_enabled()):  # a bonus needs its gradient
        entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp_all.gather(-1, ids[..., None])[..., 0], entropy


def group_logprobs(model: PreTrainedModel, prompt_ids: Sequence[int], completions: Sequence[Sequence[int]],
                   temperature: float = 1.0, pad_id: int = 0, entropy_grad: bool = False) -> GroupLogprobs:
    """Log-probs of G completions of one prompt, computing the prompt once."""
    device = model.device
    ids, mask = _pad(completions, pad_id, device)  # (G, C)
    g = ids.shape[0]
    cache = DynamicCache()
    prompt = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)  # (1, P)
    first = model(input_ids=prompt, cache=cache, use_cache=True, logits_to_keep=1).logits[:, -1:]  # (1, 1, V)
    cache.batch_repeat_interleave(g)
    # Right padding sits after every real token, so causal attention keeps it out of real positions.
    attn = torch.ones((g, prompt.shape[1] + ids.shape[1]), dtype=torch.long, device=device)
    rest = model(input_ids=ids[:, :-1], attention_mask=attn[:, :-1], cache=cache, use_cache=True).logits if ids.shape[1] > 1 else None
    logits = first.expand(g, 1, -1) if rest is None else torch.cat([first.expand(g, 1, -1), rest], dim=1)  # (G, C, V)
    logp, entropy = _gather(logits, ids, temperature, entropy_grad)
    return GroupLogprobs(logp=logp, mask=mask, entropy=entropy)


def full_sequence_logprobs(model: PreTrainedModel, prompt_ids: Sequence[int], completions: Sequence[Sequence[int]],
                           temperature: float = 1.0, pad_id: int = 0) -> GroupLogprobs:
    """Same result as group_logprobs, from one plain pass over prompt + completion per row."""
    device = model.device
    ids, mask = _pad(completions, pad_id, device)
    prompt = torch.tensor([list(prompt_ids)] * ids.shape[0], dtype=torch.long, device=device)
    full = torch.cat([prompt, ids], dim=1)
    logits = model(input_ids=full).logits[:, prompt.shape[1] - 1 : -1]  # predictions of completion tokens
    logp, entropy = _gather(logits, ids, temperature)
    return GroupLogprobs(logp=logp, mask=mask, entropy=entropy)
