"""A trained reward model as (part of) the RL reward, optionally retrained during RL.

The score of an attempt is the model's scalar for prompt + reply (the reply without its
end-of-turn token, as in training). With `reward.model_update_every` N > 0, every group that
holds both a passing and a failing attempt yields a fresh (chosen, rejected) pair, and
every N steps the reward model takes one pass of Bradley-Terry updates over the pairs
gathered since the last time: it keeps up with what the policy now writes.

The cheap checks of `temper audit rm` (safety/rm_audit.py) run inside the RL loop too, on the
attempts the model scored anyway: every `reward.model_update_every` steps (every 10 when it
is never retrained), over the groups since the last audit, `rm_audit/agreement` (the share of
(passing, failing) pairs of one group the model orders like the verifier), `rm_audit/length_r`
(Pearson r of score and reply tokens) and `rm_audit/polite_shift` (how far a polite closing
sentence, which changes no verdict, moves the scores of up to 8 replies, in score spreads).
The `rm_audit` alert fires on the audit's own thresholds.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tempering.algorithms.preference import bradley_terry_loss
from tempering.config import Config
from tempering.models import load
from tempering.safety.rm_audit import EDITS, pearson, win
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
        self.seen: list[tuple[float, int, int, bool, tuple[int, ...], tuple[int, ...]]] = []
        """Since the last audit: (score, group, length, passed, prompt, reply) per scored attempt."""
        self.groups_seen = 0
        polite = EDITS["polite_sentence"]("")
        self.polite_ids = tuple(self.tokenizer.encode(polite, add_special_tokens=False))

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
            self.groups_seen += 1
            for j, (p, reply) in enumerate(flat[k:k + len(g.sequences)]):
                self.seen.append((scores[k + j], self.groups_seen, len(reply), bool(g.passed[j]), p, reply))
            k += len(g.sequences)
        return out

    @torch.no_grad()
    def maybe_audit(self, step: int) -> dict:
        """The cheap reward-model checks over the attempts scored since the last audit."""
        every = self.cfg.reward.model_update_every or 10
        if step % every != 0 or not self.seen:
            return {}
        seen, self.seen = self.seen, []
        groups: dict[int, list[int]] = {}
        for i, row in enumerate(seen):
            groups.setdefault(row[1], []).append(i)
        pairs = [(a, b) for ids in groups.values() for a in ids for b in ids if seen[a][3] and not seen[b][3]]
        scores = [row[0] for row in seen]
        out = {"rm_audit/pairs": len(pairs), "rm_audit/length_r": pearson([float(r[2]) for r in seen], scores)}
        if pairs:
            out["rm_audit/agreement"] = sum(win(scores[a], scores[b]) for a, b in pairs) / len(pairs)
        sample = seen[:8]
        spread = float(torch.tensor(scores).std()) if len(scores) > 1 else 0.0
        if spread > 0:
            edited = reward_scores(self.model, [(r[4], r[5] + self.polite_ids) for r in sample], self.pad).tolist()
            out["rm_audit/polite_shift"] = sum(abs(e - r[0]) for e, r in zip(edited, sample)) / len(sample) / spread
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
