"""Training data for sft, dpo and reward_model: read, tokenize, order, pack.

Files are JSONL or Parquet with one example per row:

    sft             {"messages": [{"role": "user", "content": ...}, {"role": "assistant", ...}, ...]}
    dpo, reward     {"prompt": [messages] or "text", "chosen": "reply", "rejected": "reply"}

`temper data sft|pairs` writes such files from any env. Every example is tokenized with
the chat template, so training sees exactly the tokens sampling and evaluation see. The
order is a permutation seeded by (seed, epoch) and the position in it is checkpointed, so
a resumed run reads the same examples in the same order.

A file at a URL (s3://...) is streamed: rows are parsed and tokenized as its bytes arrive, and
only token ids are kept. Every row is still read before the first step, because the order is a
permutation of all examples (its length sets the epoch) and packing draws from all of them;
with data.streaming, trainer/stream.py reads, tokenizes and shuffles them as they arrive instead.
"""

from __future__ import annotations

import io
import json
import random
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

import torch

from tempering import storage
from tempering.errors import ConfigError
from tempering.rollout.hf import chat_prompt_ids
from tempering.types import Message


READ_BLOCK = 8 << 20
"""Bytes fetched from object storage per request when a corpus at a URL is read."""


def read_rows(path: str | Path) -> list[dict[str, Any]]:
    """Every row of a JSONL or Parquet file (a local path or a URL such as s3://bucket/sft.jsonl)."""
    return list(iter_rows(path))


def iter_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """The rows of a JSONL or Parquet file one at a time, read as they stream in: a file at a URL
    is fetched READ_BLOCK bytes at a time (JSONL line by line, Parquet row group by row group),
    never downloaded whole first. One ConfigError for a missing file, raised at the call."""
    remote = storage.is_remote(path)
    path = str(path) if remote else Path(path)
    if not (storage.exists(path) if remote else path.is_file()):
        raise ConfigError(f"data file {str(path)!r} not found: set data.path to a JSONL or Parquet file")
    return _rows(path, remote)


def _rows(path: str | Path, remote: bool) -> Iterator[dict[str, Any]]:
    with (storage.open_stream(path, READ_BLOCK) if remote else open(path, "rb")) as f:
        if str(path).endswith(".parquet"):
            import pyarrow.parquet as pq

            table = pq.ParquetFile(f)  # one row group at a time: iter_batches reads them all at once
            rows: Iterator[dict] = (row for i in range(table.num_row_groups) for row in table.read_row_group(i).to_pylist())
        else:
            rows = _jsonl_rows(io.TextIOWrapper(f, encoding="utf-8"), path)
        seen = False
        for row in rows:
            seen = True
            yield row
    if not seen:
        raise ConfigError(f"data file {str(path)!r} has no examples")


def _jsonl_rows(lines: Iterable[str], path) -> Iterator[dict[str, Any]]:
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError as e:
            raise ConfigError(f"{path}:{n} is not valid JSON ({e}): each line must be one JSON object") from None
        if not isinstance(row, dict):
            raise ConfigError(f"{path}:{n} is not a JSON object: each line must be one example")
        yield row


def _messages(value, where: str) -> list[Message]:
    if isinstance(value, str):
        return [Message("user", value)]
    try:
        messages = [Message(m["role"], m["content"], m.get("weight", 1)) for m in value]
    except (TypeError, KeyError, AttributeError):
        raise ConfigError(f"{where}: messages must be a list of {{\"role\", \"content\"}} objects") from None
    for m in messages:
        if m.weight not in (0, 1) or (m.weight == 0 and m.role != "assistant"):
            raise ConfigError(f"{where}: a message's weight is 0 or 1, and only an assistant message takes 0 "
                              f"(got weight {m.weight!r} on a {m.role} message)")
    return messages


def _render(tok, messages: Sequence[Message], generation_prompt: bool) -> str:
    return tok.apply_chat_template([m.as_dict() for m in messages], tokenize=False,
                                   add_generation_prompt=generation_prompt)


@dataclass(frozen=True)
class Example:
    """One tokenized conversation: the loss falls where mask is 1 (assistant replies)."""

    ids: tuple[int, ...]
    mask: tuple[int, ...]


def tokenize_chat(tok, messages: Sequence[Message]) -> Example:
    """Assistant-only loss mask: each assistant reply and its end-of-turn token are 1; system,
    user and template tokens are 0, and so is an assistant reply of weight 0 (a repair
    demonstration's wrong attempt: context for the fix, not a target). Pieces are encoded
    separately at turn boundaries, so the mask lines up exactly with the tokens."""
    ids: list[int] = []
    mask: list[int] = []
    done = ""
    special = set(tok.all_special_ids)
    for i, m in enumerate(messages):
        if m.role != "assistant" or m.weight == 0:
            continue
        opened = _render(tok, messages[:i], True)
        closed = _render(tok, messages[: i + 1], False)
        before = tok.encode(opened[len(done):], add_special_tokens=False)
        reply = tok.encode(closed[len(opened):], add_special_tokens=False)
        ends = [j for j, t in enumerate(reply) if t in special]
        cut = ends[-1] + 1 if ends else len(reply)  # nothing after the end-of-turn token is learned
        ids += before + reply
        mask += [0] * len(before) + [1] * cut + [0] * (len(reply) - cut)
        done = closed
    if not any(mask):
        raise ConfigError("an sft example has no assistant message: every row needs at least one")
    return Example(tuple(ids), tuple(mask))


@dataclass(frozen=True)
class Pair:
    """A prompt with a preferred and a dispreferred reply, as token ids."""

    prompt: tuple[int, ...]
    chosen: tuple[int, ...]
    rejected: tuple[int, ...]


def tokenize_pair(tok, row: dict, where: str, end_token: bool = True) -> Pair:
    """Replies end with the end-of-turn token (as the policy would produce it) unless
    `end_token` is False (the reward model scores the reply's last real token)."""
    for key in ("prompt", "chosen", "rejected"):
        if key not in row:
            raise ConfigError(f"{where}: a preference row needs prompt, chosen and rejected; {key!r} is missing")
    prompt = chat_prompt_ids(tok, _messages(row["prompt"], where))
    end = [tok.convert_tokens_to_ids(tok.eos_token)] if end_token else []
    return Pair(tuple(prompt), tuple(tok.encode(row["chosen"], add_special_tokens=False) + end),
                tuple(tok.encode(row["rejected"], add_special_tokens=False) + end))


def chat_example(tok, row: dict, where: str) -> Example:
    """One sft row (its chat `messages`) tokenized; `where` names the row in errors."""
    if "messages" not in row:
        raise ConfigError(f"{where}: an sft row needs a 'messages' list (chat format)")
    return tokenize_chat(tok, _messages(row["messages"], where))


def example_len(e: Example) -> int:
    return len(e.ids)


def pair_len(p: Pair) -> int:
    """Tokens of the prompt and its longer reply: what must fit in data.max_len."""
    return len(p.prompt) + max(len(p.chosen), len(p.rejected))


def load_examples(path, tok, max_len: int) -> list[Example]:
    """The chat rows of `path` that fit in max_len tokens. Longer ones are dropped, not cut
    (a cut conversation loses its last reply, the one that scored), and said so on stderr."""
    # tokenized as it streams in: only token ids are kept
    out = [chat_example(tok, row, f"{path} row {n}") for n, row in enumerate(iter_rows(path), 1)]
    return _fitting(out, example_len, max_len, path, "sft row")


def _fitting(items: list, length: Callable, max_len: int, path, what: str) -> list:
    kept = [x for x in items if length(x) <= max_len]
    if not kept:
        raise too_long_error(path, what, max_len)
    if len(kept) < len(items):
        report_dropped(path, what, max_len, len(items) - len(kept), len(items), max(length(x) for x in items))
    return kept


def too_long_error(path, what: str, max_len: int) -> ConfigError:
    return ConfigError(f"every {what} in {path} is longer than data.max_len ({max_len}): raise data.max_len")


def report_dropped(path, what: str, max_len: int, dropped: int, seen: int, longest: int) -> None:
    """One line on stderr: rows longer than max_len were dropped, not cut."""
    print(f"{path}: {dropped} of {seen} {what}s are longer than data.max_len ({max_len}; "
          f"the longest has {longest} tokens) and were dropped, not cut: raise data.max_len to keep them",
          file=sys.stderr, flush=True)


def load_pairs(path, tok, max_len: int, end_token: bool = True) -> list[Pair]:
    """Pairs whose prompt plus longer reply fit in max_len (longer ones are dropped, not cut:
    a cut reply may no longer be the better one)."""
    pairs = [tokenize_pair(tok, row, f"{path} row {n}", end_token) for n, row in enumerate(iter_rows(path), 1)]
    return _fitting(pairs, pair_len, max_len, path, "pair")


class Cursor:
    """Endless seeded order over n items: epoch e is a permutation seeded by (seed, e)."""

    def __init__(self, n: int, seed: int, shuffle: bool = True):
        self.n, self.seed, self.shuffle = n, seed, shuffle
        self.epoch, self.index = 0, 0

    def _order(self) -> list[int]:
        order = list(range(self.n))
        if self.shuffle:
            random.Random(f"{self.seed}|{self.epoch}").shuffle(order)
        return order

    def take(self, k: int) -> list[int]:
        out: list[int] = []
        while len(out) < k:
            order = self._order()
            grab = order[self.index: self.index + k - len(out)]
            out += grab
            self.index += len(grab)
            if self.index >= self.n:
                self.epoch, self.index = self.epoch + 1, 0
        return out

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict) -> None:
        self.epoch, self.index = state["epoch"], state["index"]


def pad_batch(examples: Sequence[Example], pad_id: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Right-padded (ids, attention_mask, loss_mask), each (B, L)."""
    width = max(len(e.ids) for e in examples)
    ids = torch.full((len(examples), width), pad_id, dtype=torch.long)
    attn = torch.zeros((len(examples), width), dtype=torch.long)
    loss = torch.zeros((len(examples), width))
    for i, e in enumerate(examples):
        ids[i, : len(e.ids)] = torch.tensor(e.ids)
        attn[i, : len(e.ids)] = 1
        loss[i, : len(e.ids)] = torch.tensor(e.mask, dtype=loss.dtype)
    return ids, attn, loss


def pack(examples: Sequence[Example], max_len: int, pad_id: int):
    """Pack examples into rows of up to max_len tokens, first fit in the given order.
    Returns (ids, attention, position_ids, loss_mask): attention is a 4D additive mask,
    block-diagonal and causal, so no example sees another; positions restart per example."""
    rows: list[list[Example]] = []
    for e in examples:
        for row in rows:
            if sum(len(x.ids) for x in row) + len(e.ids) <= max_len:
                row.append(e)
                break
        else:
            rows.append([e])
    width = max(sum(len(x.ids) for x in row) for row in rows)
    ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
    pos = torch.zeros((len(rows), width), dtype=torch.long)
    loss = torch.zeros((len(rows), width))
    attn = torch.full((len(rows), 1, width, width), float("-inf"))
    for r, row in enumerate(rows):
        start = 0
        for e in row:
            n = len(e.ids)
            ids[r, start:start + n] = torch.tensor(e.ids)
            pos[r, start:start + n] = torch.arange(n)
            loss[r, start:start + n] = torch.tensor(e.mask, dtype=loss.dtype)
            attn[r, 0, start:start + n, start:start + n] = torch.triu(torch.full((n, n), float("-inf")), diagonal=1)
            start += n
        attn[r, 0, start:, :] = 0.0  # padding rows attend to everything: finite, and masked out of the loss
    return ids, attn, pos, loss
