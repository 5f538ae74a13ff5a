"""Corpora at s3:// URLs against a real SeaweedFS server (tests/conftest.py): JSONL and Parquet
rows arrive as the file streams in, never after a download of the whole file; `temper data sft
--out s3://...` writes one, and an sft run trains on it; with data.streaming the first step
trains after one shuffle buffer of rows has arrived, not the corpus."""

from __future__ import annotations

import json
import secrets

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tempering import storage
from tempering.cli.main import main
from tempering.errors import ConfigError
from tempering.trainer import data, offline, stream
from tempering.trainer.data import iter_rows, read_rows
from tempering.trainer.make_data import write_jsonl

BLOCK = 64 << 10


def _rows(n: int) -> list[dict]:
    """Chat rows of ~1 KB each that do not compress (so a Parquet file is as large as its text)."""
    return [{"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": secrets.token_hex(500)}]}
            for i in range(n)]


def _opened(monkeypatch) -> list:
    """The files tempering.storage opens for streaming (the real ones, against the real server)."""
    opened, real = [], storage.open_stream

    def spy(url, block_size):
        opened.append(real(url, block_size))
        return opened[-1]

    monkeypatch.setattr(storage, "open_stream", spy)
    monkeypatch.setattr(data, "READ_BLOCK", BLOCK)
    return opened


def test_a_jsonl_corpus_at_a_url_streams_row_by_row(s3, tmp_path, monkeypatch):
    rows, local = _rows(2000), tmp_path / "sft.jsonl"
    write_jsonl(rows, local)
    url = storage.join(s3.prefix, "sft.jsonl")
    storage.put(local, url)
    opened = _opened(monkeypatch)
    stream = iter_rows(url)
    assert next(stream) == rows[0]
    fetched = opened[0].cache.total_requested_bytes  # bytes asked of the store so far
    assert 0 < fetched <= 2 * BLOCK < local.stat().st_size / 8
    assert list(stream) == rows[1:]


def test_a_parquet_corpus_at_a_url_streams_row_group_by_row_group(s3, tmp_path, monkeypatch):
    rows, local = _rows(2000), tmp_path / "sft.parquet"
    pq.write_table(pa.Table.from_pylist(rows), local, row_group_size=100, compression="none")
    url = storage.join(s3.prefix, "sft.parquet")
    storage.put(local, url)
    opened = _opened(monkeypatch)
    stream = iter_rows(url)
    assert next(stream) == rows[0]
    assert opened[0].cache.total_requested_bytes < local.stat().st_size / 4  # the footer and the first row group
    assert list(stream) == rows[1:]


def test_a_bad_corpus_is_one_clear_error(s3, tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        iter_rows(storage.join(s3.prefix, "missing.jsonl"))  # at the call, before any row is asked for
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"messages": []}) + "\n{not json\n")
    storage.put(bad, storage.join(s3.prefix, "bad.jsonl"))
    with pytest.raises(ConfigError, match="bad.jsonl:2 is not valid JSON"):
        read_rows(storage.join(s3.prefix, "bad.jsonl"))
    (tmp_path / "empty.jsonl").write_text("\n")
    storage.put(tmp_path / "empty.jsonl", storage.join(s3.prefix, "empty.jsonl"))
    with pytest.raises(ConfigError, match="has no examples"):
        read_rows(storage.join(s3.prefix, "empty.jsonl"))


def test_data_sft_writes_to_a_url_that_an_sft_run_trains_on(s3, tmp_path, capsys):
    from tempering.config import load_config
    from tempering.trainer import prepare_run, train

    url = storage.join(s3.prefix, "data", "arith.jsonl")
    assert main(["data", "sft", "--env", "math/arith-v1", "--n", "6", "--kinds", "single=1", "--model", "tiny-random",
                 "--out", url]) == 0
    assert f"to {url}" in capsys.readouterr().out
    assert storage.ls(storage.join(s3.prefix, "data")) == ["arith.jsonl"]  # whole, no .tmp left
    rows = read_rows(url)
    assert len(rows) == 6 and all(r["messages"][-1]["role"] == "assistant" for r in rows)
    sets = {"algorithm.name": "sft", "algorithm.beta": 0, "data.batch_size": 2, "data.max_len": 256, "data.path": url}
    cfg = load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in sets.items()])
    prepare_run(cfg, tmp_path / "run")
    assert [m["step"] for m in train(cfg, tmp_path / "run", steps=1, progress=False)] == [1]


def test_a_streamed_corpus_at_a_url_trains_step_1_on_one_buffer_of_it(s3, tmp_path, monkeypatch):
    """data.streaming, a buffer of 16: when step 1 computes its loss, 16 + 2 rows of 2000 have been
    read (the buffer, and one refill per example of the batch of 2), a few blocks of a 2 MB file."""
    from tempering.config import load_config
    from tempering.trainer import prepare_run, train

    rows, local = _rows(2000), tmp_path / "sft.jsonl"
    write_jsonl(rows, local)
    url = storage.join(s3.prefix, "sft.jsonl")
    storage.put(local, url)
    opened, read, at_step = _opened(monkeypatch), [], []
    real_rows, real_accumulate = stream.iter_rows, offline.SFTStep.accumulate

    def counted(path):
        for row in real_rows(path):
            read.append(row)
            yield row

    def accumulate(step, micro_batches):  # the loss of a step, before its optimiser update
        at_step.append((len(read), opened[-1].cache.total_requested_bytes))
        return real_accumulate(step, micro_batches)

    monkeypatch.setattr(stream, "iter_rows", counted)
    monkeypatch.setattr(offline.SFTStep, "accumulate", accumulate)
    sets = {"algorithm.name": "sft", "algorithm.beta": 0, "data.batch_size": 2, "data.max_len": 1024,
            "data.path": url, "data.streaming": "true", "data.shuffle_buffer": 16}
    cfg = load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in sets.items()])
    prepare_run(cfg, tmp_path / "run")
    assert [m["step"] for m in train(cfg, tmp_path / "run", steps=1, progress=False)] == [1]
    [(rows_read, fetched)] = at_step
    assert rows_read == 16 + 2 and len(opened) == 1
    assert 0 < fetched <= 2 * BLOCK < local.stat().st_size / 8
