"""data.streaming (trainer/stream.py): a seeded shuffle buffer over a corpus read as it arrives.
Every epoch draws every example once; the first take reads one buffer, not the corpus; a
restored position repeats the same draws; train.epochs ends a streamed run with its data."""

from __future__ import annotations

import pytest

from tempering.config import load_config
from tempering.envs import make
from tempering.errors import ConfigError
from tempering.trainer import prepare_run, train
from tempering.trainer.make_data import sft_rows, write_jsonl
from tempering.trainer.stream import Stream, corpus_stream
from tempering.trainer.validate import validate


class Corpus:
    """A corpus of n examples 0..n-1 that counts the examples read from it (all passes)."""

    def __init__(self, n: int):
        self.n, self.read, self.passes = n, 0, 0

    def open(self):
        self.passes += 1
        for i in range(self.n):
            self.read += 1
            yield i


def _stream(corpus: Corpus, buffer: int = 8, shuffle: bool = True, epochs: int = 0, seed: int = 0) -> Stream:
    return Stream(corpus.open, seed, shuffle, buffer, epochs)


def test_each_epoch_draws_every_example_once_in_a_seeded_order_within_the_buffer():
    corpus = Corpus(50)
    s = _stream(corpus)
    first, second = s.take(50), s.take(50)
    assert sorted(first) == sorted(second) == list(range(50))
    assert first != list(range(50)) and second != first  # shuffled, and each epoch with its own seed
    assert corpus.passes == 2 and s.epoch == 2 and s.index == 0
    # an example is drawn no earlier than buffer - 1 draws before its place in the file
    assert all(j >= x - (8 - 1) for j, x in enumerate(first))
    assert _stream(Corpus(50)).take(100) == first + second  # the same seed, the same order
    assert _stream(Corpus(50), seed=1).take(50) != first
    assert _stream(Corpus(50), shuffle=False).take(60) == list(range(50)) + list(range(10))


def test_the_first_take_reads_one_buffer_not_the_corpus():
    corpus = Corpus(10_000)
    s = _stream(corpus, buffer=16)
    assert corpus.read == 0  # nothing is read until a step asks
    assert len(s.take(4)) == 4
    assert corpus.read == 16 + 4  # the buffer, then one example per draw to refill it
    assert len(s._pass.buffer) == 16


def test_a_restored_position_repeats_the_same_draws():
    straight = _stream(Corpus(23), buffer=5).take(7 * 9)  # nine steps of seven, across two epochs
    corpus = Corpus(23)
    s, resumed = _stream(corpus, buffer=5), []
    for step in range(9):
        resumed += s.take(7)
        if step in (1, 4):  # "killed" after steps 2 and 5: a fresh stream from the checkpointed position
            state = s.state_dict()
            s.close()
            s = _stream(corpus, buffer=5)
            s.load_state_dict(state)
    assert resumed == straight
    assert corpus.read > 23 * 3  # the resumes re-read their epoch up to the position: that is the price


def test_epochs_end_the_stream_and_the_last_take_is_short():
    s = _stream(Corpus(10), buffer=4, epochs=2)
    taken = [s.take(3) for _ in range(7)]
    assert [len(t) for t in taken] == [3, 3, 3, 3, 3, 3, 2]
    assert sorted(x for t in taken[:3] for x in t) + [taken[3][0]] == list(range(10))
    assert s.exhausted and s.take(3) == [] and s.state_dict() == {"epoch": 2, "index": 0}


@pytest.fixture(scope="module")
def sft_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "sft.jsonl"
    write_jsonl(sft_rows(make("math/arith-v1"), "train", 24), path)
    return path


def _cfg(data, **over):
    sets = {"algorithm.name": "sft", "algorithm.beta": 0, "data.path": str(data), "data.batch_size": 5,
            "data.max_len": 128, "data.streaming": True, "data.shuffle_buffer": 6, "optim.lr": 1e-3,
            "train.save_every": 2, **over}
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in sets.items()])


def test_streamed_rows_longer_than_max_len_are_dropped_and_said(tmp_path, tiny, capsys):
    path = tmp_path / "sft.jsonl"
    short = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    long = [{"role": "user", "content": "count: " + " ".join(map(str, range(200)))}, {"role": "assistant", "content": "200"}]
    write_jsonl([{"messages": short}, {"messages": long}, {"messages": short}], path)
    s = corpus_stream(_cfg(path, **{"data.shuffle": False, "data.max_len": 64}), tiny.tokenizer)
    assert len(s.take(2)) == 2 and s.epoch == 1  # the two short rows made the epoch
    assert "1 of 3 sft rows are longer than data.max_len (64" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="every sft row .* is longer than data.max_len"):
        corpus_stream(_cfg(path, **{"data.max_len": 8}), tiny.tokenizer).take(1)
    with pytest.raises(ConfigError, match="not found"):
        corpus_stream(_cfg(tmp_path / "missing.jsonl"), tiny.tokenizer)


def test_train_epochs_end_a_streamed_run_with_its_data(tmp_path, sft_file, capsys):
    """24 rows in steps of 5 for 1 epoch: 5 steps, the last of 4 rows; the step count is not
    known before (progress shows no total, no cosine), the final checkpoint is saved, and a
    resume has nothing left."""
    cfg = _cfg(sft_file, **{"train.epochs": 1, "train.steps": 1000, "log.progress": "lines"})
    prepare_run(cfg, tmp_path / "run")
    metrics = train(cfg, tmp_path / "run")
    assert [m["step"] for m in metrics] == [1, 2, 3, 4, 5]
    lines = [ln.split()[:2] for ln in capsys.readouterr().out.splitlines() if ln.startswith("step ")]
    assert lines == [["step", "1"], ["step", "2"], ["step", "3"], ["step", "4"], ["step", "5"]]
    assert [m["epoch"] for m in metrics] == [0, 0, 0, 0, 1]
    assert (tmp_path / "run" / "checkpoints" / "step-5").is_dir()
    assert train(cfg, tmp_path / "run", resume=True, progress=False) == []
    for bad, match in (({"train.epochs": 1.5}, "whole number"), ({"train.epochs": 1, "optim.schedule": "cosine"},
                                                                  "steps are known only once the data is read")):
        with pytest.raises(ConfigError, match=match):
            validate(_cfg(sft_file, **bad))
