"""Training data taken as it streams in (data.streaming): the first step waits for one shuffle
buffer of examples, not for the whole corpus, and memory holds that buffer, not the corpus.

Each epoch opens the file again and reads it front to back (trainer/data.iter_rows: a file at a
URL is fetched a block at a time). Each row is tokenized as it arrives; rows longer than
data.max_len are dropped, as the offline loader drops them. Examples pass through a buffer of
data.shuffle_buffer: each draw takes a random slot, seeded by (seed, epoch), and refills it with
the next example of the file, the way webdataset and Hugging Face's IterableDataset shuffle.
With data.shuffle off the buffer holds one example and the order is the file's.

What is kept and what is dropped, against the offline loader (trainer/data.Cursor):
- the order is shuffled within a window, not a permutation of the corpus: an example is drawn
  no earlier than shuffle_buffer - 1 examples before its place in the file, so a file sorted
  by topic stays roughly sorted; each epoch still draws every example exactly once;
- an epoch's length is known only once it is read, so train.epochs ends the run when the last
  pass is read instead of setting the step count up front (trainer/run.py);
- resume: the position (epoch, examples drawn in it) is checkpointed; a resumed run opens that
  epoch's file again and repeats the same seeded draws, discarding them, so it continues
  bitwise. The rows before the position are read and tokenized again: a resume late in a long
  epoch pays for re-reading it.
"""

from __future__ import annotations

import contextlib
import itertools
import random
from typing import Callable, Iterator

from tempering.config import RECIPES, Config
from tempering.errors import ConfigError
from tempering.trainer.data import (chat_example, example_len, iter_rows, pair_len, report_dropped,
                                    tokenize_pair, too_long_error)


def _examples(path: str, tokenize: Callable, length: Callable, max_len: int, what: str) -> Iterator:
    """The file's rows tokenized as they stream in, those longer than max_len left out (said
    once the pass is read)."""
    seen = dropped = longest = 0
    with contextlib.closing(iter_rows(path)) as rows:  # a pass closed early closes the file now
        for seen, row in enumerate(rows, 1):
            item = tokenize(row, f"{path} row {seen}")
            if length(item) <= max_len:
                yield item
            else:
                dropped, longest = dropped + 1, max(longest, length(item))
    if dropped == seen:
        raise too_long_error(path, what, max_len)
    if dropped:
        report_dropped(path, what, max_len, dropped, seen, longest)


class _Pass:
    """One epoch: the examples of `items` in buffer-shuffled order (`rng` None: in order)."""

    def __init__(self, items: Iterator, size: int, rng: random.Random | None):
        self.items, self.rng = items, rng
        self.buffer = list(itertools.islice(items, size))

    def draw(self):
        """The next example, or None once the pass is read."""
        if not self.buffer:
            return None
        i = self.rng.randrange(len(self.buffer)) if self.rng is not None else 0
        out, new = self.buffer[i], next(self.items, None)
        if new is not None:
            self.buffer[i] = new
        else:  # the file is read: draw the rest at random, the buffer shrinking
            self.buffer[i] = self.buffer[-1]
            self.buffer.pop()
        return out

    def close(self) -> None:
        self.items.close()  # ends the read: iter_rows closes the file


class Stream:
    """The corpus's examples as steps take them: epoch after epoch (each opened again with its
    own seed), ending after `epochs` passes (0: never). `take` and the state are Cursor's."""

    def __init__(self, open_pass: Callable[[], Iterator], seed: int, shuffle: bool, buffer: int, epochs: int = 0):
        self.open_pass, self.seed, self.shuffle, self.buffer, self.epochs = open_pass, seed, shuffle, buffer, epochs
        self.epoch, self.index = 0, 0  # index: examples drawn in this epoch
        self._pass: _Pass | None = None

    @property
    def exhausted(self) -> bool:
        """train.epochs passes are read (never when epochs is 0)."""
        return self.epochs > 0 and self.epoch >= self.epochs

    def take(self, k: int) -> list:
        """The next k examples, fewer only when the last epoch ends among them."""
        out: list = []
        while len(out) < k and not self.exhausted:
            if self._pass is None:
                self._pass = self._open()
            out.append(self._pass.draw())
            self.index += 1
            if not self._pass.buffer:  # that was the epoch's last example
                self._pass.close()
                self._pass = None
                self.epoch, self.index = self.epoch + 1, 0
        return out

    def _open(self) -> _Pass:
        rng = random.Random(f"{self.seed}|{self.epoch}") if self.shuffle else None
        opened = _Pass(self.open_pass(), self.buffer if self.shuffle else 1, rng)
        for _ in range(self.index):  # a resume: the same seeded draws again, discarded
            if opened.draw() is None or not opened.buffer:
                opened.close()
                raise ConfigError(f"the data file has fewer examples than the checkpoint's position (epoch "
                                  f"{self.epoch}, example {self.index}): it changed since the run began")
        return opened

    def close(self) -> None:
        if self._pass is not None:
            self._pass.close()
            self._pass = None

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "index": self.index}

    def load_state_dict(self, state: dict) -> None:
        self.close()
        self.epoch, self.index = state["epoch"], state["index"]


def corpus_stream(cfg: Config, tok) -> Stream:
    """data.path as a Stream of what its recipe trains on: chat examples for sft, pairs for
    dpo and the reward model. Nothing is read yet; a missing file is one ConfigError now."""
    d, recipe = cfg.data, RECIPES[cfg.algorithm.name]
    iter_rows(d.path)  # checks the file is there; its rows are read only when a step asks
    if recipe.data == "sft":
        def open_pass() -> Iterator:
            return _examples(d.path, lambda row, where: chat_example(tok, row, where), example_len, d.max_len, "sft row")
    else:
        end_token = recipe.head != "reward"

        def open_pass() -> Iterator:
            return _examples(d.path, lambda row, where: tokenize_pair(tok, row, where, end_token), pair_len,
                             d.max_len, "pair")
    return Stream(open_pass, cfg.seed, d.shuffle, d.shuffle_buffer, int(cfg.train.epochs))
