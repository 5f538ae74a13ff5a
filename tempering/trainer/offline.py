"""Trainers on a fixed data file: sft, dpo and reward_model.

Each step takes `data.batch_size * optim.grad_accum` examples in the cursor's seeded
order, runs them as `grad_accum` micro-batches, and makes one optimiser step. Losses are
normalised by counts over the whole step (tokens for sft, pairs for dpo and the reward
model), so 1 micro-batch of 8 and 8 micro-batches of 1 give the same gradient. With
data.streaming the examples come from a Stream (trainer/stream.py) in its buffer-shuffled order.
"""

from __future__ import annotations

import math
import time

import torch

from tempering.algorithms.preference import bradley_terry_loss, dpo_loss
from tempering.config import RECIPES, Config
from tempering.trainer.data import Cursor, load_examples, load_pairs, pack, pad_batch
from tempering.trainer.logprobs import group_logprobs
from tempering.trainer.stream import Stream, corpus_stream


class _OfflineStep:
    """What the three share: data cursor, micro-batching, the optimiser step, state."""

    def __init__(self, cfg: Config, model, tokenizer, optimizer, scheduler, items: list | Stream):
        self.cfg, self.model, self.tokenizer = cfg, model, tokenizer
        self.optimizer, self.scheduler = optimizer, scheduler
        self.items = items
        self.cursor = items if isinstance(items, Stream) else Cursor(len(items), cfg.seed, cfg.data.shuffle)
        self.pad = tokenizer.pad_token_id or 0

    def take(self, k: int) -> list:
        if isinstance(self.cursor, Stream):
            return self.cursor.take(k)
        return [self.items[i] for i in self.cursor.take(k)]

    @property
    def exhausted(self) -> bool:
        """A streamed corpus's train.epochs are read (the run ends); a list's cursor never ends."""
        return isinstance(self.cursor, Stream) and self.cursor.exhausted

    def close(self) -> None:
        if isinstance(self.cursor, Stream):
            self.cursor.close()

    def state_dict(self) -> dict:
        return {"cursor": self.cursor.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.cursor.load_state_dict(state["cursor"])

    def step(self, step: int) -> dict:
        t0 = time.perf_counter()
        bs, accum = self.cfg.data.batch_size, self.cfg.optim.grad_accum
        batch = self.take(bs * accum)  # fewer only in a streamed corpus's last epoch
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        metrics = self.accumulate([batch[i:i + bs] for i in range(0, len(batch), bs)])
        grad_norm = torch.nn.utils.clip_grad_norm_(
            [p for p in self.model.parameters() if p.requires_grad], self.cfg.optim.grad_clip)
        self.optimizer.step()
        self.scheduler.step()
        self.model.eval()
        return {"step": step, **metrics, "grad_norm": float(grad_norm), "lr": self.scheduler.get_last_lr()[0],
                "epoch": self.cursor.epoch, "time_step": time.perf_counter() - t0}

    def accumulate(self, micro_batches: list[list]) -> dict:
        raise NotImplementedError

    def summary(self, m: dict) -> str:
        return f"loss {m['loss']:.4f} {m['time_step']:.1f}s/step"


class SFTStep(_OfflineStep):
    """Next-token cross-entropy on assistant tokens only, averaged over the step's tokens."""

    def accumulate(self, micro_batches):
        total = float(sum(sum(e.mask[1:]) for mb in micro_batches for e in mb))
        loss_sum = 0.0
        for mb in micro_batches:
            if self.cfg.data.packing:
                ids, attn, pos, mask = (t.to(self.model.device) for t in pack(mb, self.cfg.data.max_len, self.pad))
                logits = self.model(input_ids=ids, attention_mask=attn, position_ids=pos).logits
            else:
                ids, attn, mask = (t.to(self.model.device) for t in pad_batch(mb, self.pad))
                logits = self.model(input_ids=ids, attention_mask=attn).logits
            logp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None])[..., 0]  # (B, L-1)
            loss = -(logp * mask[:, 1:]).sum() / max(total, 1.0)
            loss.backward()
            loss_sum += loss.item()
        return {"loss": loss_sum, "tokens": total}


def _sequence_logps(model, pairs, kind: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(P,) log-probs of each pair's chosen and rejected reply: summed, or per-token means for ipo."""
    chosen, rejected = [], []
    for p in pairs:
        lp = group_logprobs(model, p.prompt, [p.chosen, p.rejected], temperature=1.0)
        per = (lp.logp * lp.mask).sum(dim=1)  # (2,)
        if kind == "ipo":
            per = per / lp.mask.sum(dim=1)
        chosen.append(per[0])
        rejected.append(per[1])
    return torch.stack(chosen), torch.stack(rejected)


class DPOStep(_OfflineStep):
    """DPO or IPO against the frozen reference (the model the run started from)."""

    def __init__(self, cfg, model, tokenizer, optimizer, scheduler, items, reference):
        super().__init__(cfg, model, tokenizer, optimizer, scheduler, items)
        self.reference = reference

    def accumulate(self, micro_batches):
        total = float(sum(len(mb) for mb in micro_batches))
        kind, beta = self.cfg.preference.loss, self.cfg.preference.beta
        sums = {"loss": 0.0, "accuracy": 0.0, "margin": 0.0}
        for mb in micro_batches:
            with torch.no_grad():
                ref_c, ref_r = _sequence_logps(self.reference, mb, kind)
            pol_c, pol_r = _sequence_logps(self.model, mb, kind)
            out = dpo_loss(pol_c, pol_r, ref_c, ref_r, beta=beta, kind=kind)
            (out.loss * len(mb) / total).backward()
            for k in sums:
                sums[k] += getattr(out, k).item() * len(mb) / total
        return sums

    def summary(self, m: dict) -> str:
        return f"loss {m['loss']:.4f} acc {m['accuracy']:.2f} margin {m['margin']:.3f} {m['time_step']:.1f}s/step"


def reward_scores(model, prompts_and_replies: list[tuple[tuple[int, ...], tuple[int, ...]]], pad_id: int) -> torch.Tensor:
    """(N,) scalar scores of prompt+reply sequences (the head reads the last real token)."""
    seqs = [list(p) + list(r) for p, r in prompts_and_replies]
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        attn[i, : len(s)] = 1
    return model(input_ids=ids.to(model.device), attention_mask=attn.to(model.device)).logits[:, 0].float()


def pair_scores(model, pairs, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(P,) scores of each pair's chosen and rejected reply, in one batch."""
    s = reward_scores(model, [(p.prompt, p.chosen) for p in pairs] + [(p.prompt, p.rejected) for p in pairs], pad_id)
    return s[: len(pairs)], s[len(pairs):]


class RewardModelStep(_OfflineStep):
    """Bradley-Terry on preference pairs: the chosen reply should score higher."""

    def accumulate(self, micro_batches):
        total = float(sum(len(mb) for mb in micro_batches))
        sums = {"loss": 0.0, "accuracy": 0.0, "margin": 0.0}
        for mb in micro_batches:
            out = bradley_terry_loss(*pair_scores(self.model, mb, self.pad))
            (out.loss * len(mb) / total).backward()
            for k in sums:
                sums[k] += getattr(out, k).item() * len(mb) / total
        return sums

    def summary(self, m: dict) -> str:
        return f"loss {m['loss']:.4f} acc {m['accuracy']:.2f} {m['time_step']:.1f}s/step"


@torch.no_grad()
def pair_accuracy(model, pairs, pad_id: int, batch: int = 16) -> float:
    """Fraction of pairs a reward model ranks the right way round."""
    model.eval()
    right = 0
    for i in range(0, len(pairs), batch):
        mb = pairs[i:i + batch]
        chosen, rejected = pair_scores(model, mb, pad_id)
        right += int((chosen > rejected).sum())
    return right / len(pairs)


def offline_items(cfg: Config, tok) -> list | Stream:
    """The data file's rows as its recipe trains on them: chat examples for sft, pairs for
    dpo and the reward model (rows longer than data.max_len dropped, said on stderr); all of
    them, or with data.streaming a Stream that reads them as steps take them."""
    d, recipe = cfg.data, RECIPES[cfg.algorithm.name]
    if d.streaming:
        return corpus_stream(cfg, tok)
    if recipe.data == "sft":
        return load_examples(d.path, tok, d.max_len)
    return load_pairs(d.path, tok, d.max_len, end_token=recipe.head != "reward")


def epoch_steps(cfg: Config, rows: int) -> int:
    """Optimiser steps for train.epochs passes over `rows` (each step takes batch_size x grad_accum)."""
    return max(1, math.ceil(cfg.train.epochs * rows / (cfg.data.batch_size * cfg.optim.grad_accum)))


def make_offline_step(cfg: Config, loaded, optimizer, scheduler, items: list | Stream | None = None):
    """The step its recipe asks for: SFT on chat rows, a reward model on pairs, or DPO on
    pairs against a frozen copy of the start; `items` are offline_items, loaded if not given."""
    tok = loaded.tokenizer
    recipe = RECIPES[cfg.algorithm.name]
    items = offline_items(cfg, tok) if items is None else items
    if recipe.data == "sft":
        return SFTStep(cfg, loaded.model, tok, optimizer, scheduler, items)
    if recipe.head == "reward":
        return RewardModelStep(cfg, loaded.model, tok, optimizer, scheduler, items)
    from tempering.models import load

    reference = load(cfg.model.name, cfg.model.dtype, cfg.model.device).model
    reference.requires_grad_(False)
    return DPOStep(cfg, loaded.model, tok, optimizer, scheduler, items, reference)
