"""The decode loop's KV cache (rollout/engine.py): one layer's keys and values in buffers with
room to grow, written in place."""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer


class RoomyLayer(DynamicLayer):
    """A KV-cache layer with room to grow, in rows and in columns. Keys and values live in
    buffers with spare columns, and each decode step writes its column in place; rows that
    join are written into spare rows, and a finished row is overwritten by a live one. A
    plain DynamicLayer concatenates the whole cache at every step, and selecting or adding
    rows copies all of it: with a wide batch and long contexts, those copies took 38% and
    then 49% of decode time on a 2-core CPU (py-spy, HumanEval pass@10 sampling)."""

    GROW = 256

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, width: int | None = None, rows: int = 0) -> None:
        """Hold `keys`/`values` (B, H, L, D) right-aligned at column `width` (default L), with
        room for at least `rows` rows."""
        super().__init__()
        b, h, n, d = keys.shape
        width = n if width is None else width
        self.kbuf = keys.new_zeros(max(b, rows), h, width + self.GROW, d)
        self.vbuf = values.new_zeros(max(b, rows), h, width + self.GROW, d)
        self.kbuf[:b, :, width - n:width] = keys
        self.vbuf[:b, :, width - n:width] = values
        self.n, self.rows = width, b
        self.device, self.dtype, self.is_initialized = keys.device, keys.dtype, True
        self._view()

    def _view(self) -> None:
        self.keys, self.values = self.kbuf[:self.rows, :, :self.n], self.vbuf[:self.rows, :, :self.n]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        q = key_states.shape[-2]
        if self.n + q > self.kbuf.shape[2]:
            self.kbuf = torch.cat([self.kbuf, self.kbuf.new_zeros(*self.kbuf.shape[:2], q + self.GROW, self.kbuf.shape[3])], 2)
            self.vbuf = torch.cat([self.vbuf, self.vbuf.new_zeros(*self.vbuf.shape[:2], q + self.GROW, self.vbuf.shape[3])], 2)
        self.kbuf[:self.rows, :, self.n:self.n + q] = key_states
        self.vbuf[:self.rows, :, self.n:self.n + q] = value_states
        self.n += q
        self._view()
        return self.keys, self.values

    def append_rows(self, keys: torch.Tensor, values: torch.Tensor) -> None:
        """Add rows (B', H, L', D), right-aligned with the rows already here (left-padded
        with zeros, which the attention mask hides)."""
        b, _, n, _ = keys.shape
        if self.rows + b > self.kbuf.shape[0] or n > self.n:
            width = max(self.n, n)
            grown = RoomyLayer(pad_left(self.keys, width), pad_left(self.values, width),
                                rows=max(self.rows + b, self.kbuf.shape[0]))  # keep the spare rows
            self.kbuf, self.vbuf, self.n = grown.kbuf, grown.vbuf, width
        new = slice(self.rows, self.rows + b)
        self.kbuf[new, :, :self.n - n] = 0
        self.vbuf[new, :, :self.n - n] = 0
        self.kbuf[new, :, self.n - n:self.n] = keys
        self.vbuf[new, :, self.n - n:self.n] = values
        self.rows += b
        self._view()

    def keep_rows(self, rows: int, src: torch.Tensor, dst: torch.Tensor) -> None:
        """Copy rows `src` over rows `dst` (live columns only), then keep the first `rows`."""
        if len(src):
            self.kbuf[dst, :, :self.n] = self.kbuf[src, :, :self.n]
            self.vbuf[dst, :, :self.n] = self.vbuf[src, :, :self.n]
        self.rows = rows
        self._view()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.kbuf, self.vbuf = self.kbuf[indices], self.vbuf[indices]
        self.rows = len(indices)
        self._view()

    def drop_left(self, columns: int) -> None:
        """Forget the first `columns` columns (no row attends to them any more)."""
        self.kbuf, self.vbuf = self.kbuf[:, :, columns:], self.vbuf[:, :, columns:]
        self.n -= columns
        self._view()


def pad_left(x: torch.Tensor, width: int, dim: int = 2) -> torch.Tensor:
    """Zero-pad `x` on the left of `dim` to `width` (cache tensors are (B, H, L, D))."""
    missing = width - x.shape[dim]
    if missing <= 0:
        return x
    shape = list(x.shape)
    shape[dim] = missing
    return torch.cat([x.new_zeros(shape), x], dim=dim)
