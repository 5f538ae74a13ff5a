"""A trained reward model as (part of) the RL reward, optionally retrained during RL.

The score of an attempt is the model's scalar for prompt + reply (the reply without its
end-of-turn token, as in training). With `reward.model_update_every` N > 0, every group that
holds both a passing and a failing attempt yields a fresh (chosen, rejected) pair, and
every N steps the reward model takes one pass of Bradley-Terry updates over the pairs
gathered since the last time: it keeps up with what the policy now writes.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tempering.algorithms.preference import bradley_terry_loss
from tempering.config import Config
from tempering.models import load
from tempering.trainer.data import Pair
from tempering.trainer.offline import pair_scores, reward_scores


class RewardModelScorer:
    def __init__(self, cfg: Config, path: str | Path):
        self.cfg = cfg
        loaded = load(str(path), cfg.model.dtype, cfg.model.device, kind="reward")
        self.model, self.tokenizer = loaded.model, loaded.tokenizer
        self.pad = self.tokenizer.pad_token_id or 0
        self.special = set(self.tokenizer.all_special_ids)
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.optim.lr, betas=cfg.optim.betas)
        self.pairs: list[Pair] = []

    def _reply(self, seq) -> tuple[int, ...]:
        seq = tuple(seq)
        while seq and seq[-1] in self.special:
            seq = seq[:-1]
        return seq

    @torch.no_grad()
    def score(self, groups, batch: int = 32) -> list[list[float]]:
        """Scores per attempt, group by group."""
        flat = [(tuple(g.prompt_ids), self._reply(s)) for g in groups for s in g.sequences]
        scores: list[float] = []
        for i in range(0, len(flat), batch):
            scores += reward_scores(self.model, flat[i:i + batch], self.pad).tolist()
        out, k = [], 0
        for g in groups:
            out.append(scores[k:k + len(g.sequences)])
            k += len(g.sequences)
        return out

    def observe(self, groups) -> None:
        """Keep one (passing, failing) pair from each group that has both."""
        if self.cfg.reward.model_update_every <= 0:
            return
        for g in groups:
            good = [s for s, p in zip(g.sequences, g.passed) if p]
            bad = [s for s, p in zip(g.sequences, g.passed) if not p]
            if good and bad:
                self.pairs.append(Pair(tuple(g.prompt_ids), self._reply(good[0]), self._reply(bad[0])))

    def maybe_update(self, step: int) -> dict:
        every = self.cfg.reward.model_update_every
        if every <= 0 or step % every != 0 or not self.pairs:
            return {}
        self.model.train()
        bs, sums, n = self.cfg.data.batch_size, {"rm_loss": 0.0, "rm_accuracy": 0.0}, len(self.pairs)
        for i in range(0, n, bs):
            mb = self.pairs[i:i + bs]
            self.optimizer.zero_grad(set_to_none=True)
            out = bradley_terry_loss(*pair_scores(self.model, mb, self.pad))
            out.loss.backward()
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.grad_clip)
            self.optimizer.step()
            sums["rm_loss"] += out.loss.item() * len(mb) / n
            sums["rm_accuracy"] += out.accuracy.item() * len(mb) / n
        self.model.eval()
        self.pairs = []
        return {**sums, "rm_pairs": n}

    def state_dict(self) -> dict:
        return {"pairs": [[list(p.prompt), list(p.chosen), list(p.rejected)] for p in self.pairs]}

    def load_state_dict(self, state: dict) -> None:
        self.pairs = [Pair(tuple(a), tuple(b), tuple(c)) for a, b, c in state["pairs"]]

    def save(self, directory: Path) -> None:
        self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)
        torch.save(self.optimizer.state_dict(), directory / "optimizer.pt")

    def load_optimizer(self, directory: Path) -> None:
        self.optimizer.load_state_dict(torch.load(directory / "optimizer.pt", map_location="cpu", weights_only=True))
