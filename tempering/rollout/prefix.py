"""Prefix reuse between the turns of a conversation: the KV cache of a finished reply, kept
so that the next turn (the same tokens plus the env's feedback) prefills only what was added.
`Engine` stores and takes entries; `HFClient.reusing_prefixes` scopes them to a run of episodes."""

from __future__ import annotations

import threading
from typing import Sequence

import torch


class PrefixStore:
    """The KV caches of finished rows, kept for the next turn of their conversation.

    Keyed by the tokens the cache covers (the prompt and every sampled token but the last,
    which was never fed back). `take(prompt)` hands out, and forgets, the longest entry that
    is a prefix of `prompt`. Bounded in bytes: the oldest entries go first. Records only while
    `active` (the agent loop turns it on for the span of its episodes, then clears it).
    Thread-safe: a client may serve an evaluation and episodes sampled ahead at once."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.lock = threading.Lock()
        self.entries: dict[tuple[int, ...], list[tuple[torch.Tensor, torch.Tensor]]] = {}  # oldest first
        self.bytes = 0
        self.active = False
        self.hits = 0
        self.reused_tokens = 0
        """Prompt tokens that came from the store instead of a prefill."""

    @staticmethod
    def _size(kv: list[tuple[torch.Tensor, torch.Tensor]]) -> int:
        return sum(k.numel() * k.element_size() + v.numel() * v.element_size() for k, v in kv)

    def put(self, tokens: tuple[int, ...], kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        with self.lock:
            self._put(tokens, kv)

    def _put(self, tokens: tuple[int, ...], kv: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        size = self._size(kv)
        if size > self.max_bytes:
            return
        self._drop(tokens)
        while self.entries and self.bytes + size > self.max_bytes:
            self._drop(next(iter(self.entries)))
        self.entries[tokens] = kv
        self.bytes += size

    def take(self, prompt: Sequence[int]) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        """The cache of the longest stored prefix of `prompt`, cut so that at least one prompt
        token is left to prefill (its logits start the reply); None if no entry fits."""
        with self.lock:
            return self._take(tuple(prompt))

    def _take(self, prompt: tuple[int, ...]) -> list[tuple[torch.Tensor, torch.Tensor]] | None:
        best = max((t for t in self.entries if len(t) <= len(prompt) and prompt[:len(t)] == t), key=len, default=None)
        if best is None:
            return None
        kv = self.entries[best]
        self._drop(best)
        used = min(len(best), len(prompt) - 1)
        if used <= 0:
            return None
        self.hits += 1
        self.reused_tokens += used
        return [(k[:, :, :used], v[:, :, :used]) for k, v in kv]

    def discard(self, tokens: Sequence[int]) -> None:
        """Forget the entries that are prefixes of `tokens` (a conversation that has ended)."""
        tokens = tuple(tokens)
        with self.lock:
            for t in [t for t in self.entries if tokens[:len(t)] == t]:
                self._drop(t)

    def clear(self) -> None:
        with self.lock:
            self.entries.clear()
            self.bytes = 0

    def _drop(self, tokens: tuple[int, ...]) -> None:
        kv = self.entries.pop(tokens, None)
        if kv is not None:
            self.bytes -= self._size(kv)
