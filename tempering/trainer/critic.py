"""PPO's critic: a value per generated token, from the policy's weights plus a fresh head.

The model is `AutoModelForTokenClassification` with one label, so it saves and loads as a
plain Hugging Face model. The value of token t is read at the position that predicts t
(the state before t is generated), the same alignment as the policy's log-probs.
"""

from __future__ import annotations

from pathlib import Path

import torch
from transformers import AutoModelForTokenClassification

from tempering.algorithms.losses import Norm, value_loss
from tempering.config import Config
from tempering.models import resolve_device


class Critic:
    def __init__(self, path: str | Path, cfg: Config, dtype: torch.dtype = torch.float32):
        self.cfg = cfg
        self.model = AutoModelForTokenClassification.from_pretrained(path, num_labels=1, dtype=dtype)
        self.model.to(resolve_device(cfg.model.device))
        self.model.config.classifier_dropout = 0.0  # deterministic values (and exact resume)
        if hasattr(self.model, "dropout"):
            self.model.dropout.p = 0.0
        self.model.eval()
        self.optimizer = torch.optim.AdamW(self.model.parameters(), lr=cfg.critic.lr, betas=cfg.optim.betas)

    def _values(self, group) -> torch.Tensor:
        """(G, C) values of the states before each token after the prompt."""
        p = len(group.prompt_ids)
        width = max(1, max(len(s) for s in group.sequences))
        ids = torch.zeros((len(group.sequences), p + width), dtype=torch.long)
        ids[:, :p] = torch.tensor(group.prompt_ids)
        for i, s in enumerate(group.sequences):
            ids[i, p : p + len(s)] = torch.tensor(s, dtype=torch.long)
        out = self.model(input_ids=ids.to(self.model.device)).logits[..., 0]  # (G, P + C)
        return out[:, p - 1 : p - 1 + width].float()

    @torch.no_grad()
    def values(self, group) -> torch.Tensor:
        return self._values(group)

    def update(self, batch, returns, old_values, masks) -> dict:
        """One optimiser step of the clipped value loss over the batch: per group, (G, C)
        GAE returns as targets, the values at sampling time for the clip, and the loss mask."""
        norm = Norm(tokens=float(sum(m.sum() for m in masks)), sequences=float(len(batch)))
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        total = 0.0
        for g, ret, old, mask in zip(batch, returns, old_values, masks):
            loss = value_loss(self._values(g), old, ret, mask, clip=self.cfg.critic.value_clip, norm=norm)
            loss.backward()
            total += loss.item()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.cfg.optim.grad_clip)
        self.optimizer.step()
        self.model.eval()
        return {"value_loss": total}

    def save(self, directory: Path) -> None:
        self.model.save_pretrained(directory)
        torch.save(self.optimizer.state_dict(), directory / "optimizer.pt")

    @classmethod
    def load(cls, directory: Path, cfg: Config, dtype: torch.dtype = torch.float32) -> "Critic":
        critic = cls(directory, cfg, dtype)
        critic.optimizer.load_state_dict(torch.load(directory / "optimizer.pt", map_location="cpu", weights_only=True))
        return critic
