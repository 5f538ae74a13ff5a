"""envs.artifacts: the store, its persistence and RECALL requests."""

from __future__ import annotations

import json

import pytest

from tempering.errors import TaskError
from tempering.envs.artifacts import ArtifactStore, answer_recalls, parse_recalls


@pytest.fixture
def store() -> ArtifactStore:
    s = ArtifactStore()
    s.put("parse", 1, "code", "def parse(line): return line")
    s.put("parse", 1, "log", "IndexError")
    s.put("parse", 2, "code", "def parse(line): return line.split(',')")
    s.put("total", 3, "code", "def total(xs): return sum(xs)")
    return s


def test_get_latest_and_list(store):
    assert store.get("parse", 1, "code") == "def parse(line): return line"
    assert store.get("parse", 9, "code") is None
    assert store.latest("code").ref == "total/3/code"
    assert store.latest("code", subtask="parse").text == "def parse(line): return line.split(',')"
    assert store.latest("diff") is None
    assert [a.ref for a in store.list()] == ["parse/1/code", "parse/1/log", "parse/2/code", "total/3/code"]


def test_a_replaced_artifact_becomes_the_latest(store):
    store.put("parse", 1, "code", "v1b")
    assert store.latest("code").ref == "parse/1/code" and store.get("parse", 1, "code") == "v1b"
    assert len(store) == 4


def test_round_trips_through_json(store):
    again = ArtifactStore.from_dict(json.loads(json.dumps(store.to_dict())))
    assert again.list() == store.list()
    with pytest.raises(TaskError, match="malformed artifact store"):
        ArtifactStore.from_dict({"artifacts": [{"subtask": "a"}]})


def test_names_must_fit_a_recall_line():
    with pytest.raises(TaskError, match="without '/'"):
        ArtifactStore().put("a/b", 1, "code", "")
    with pytest.raises(TaskError, match="non-negative"):
        ArtifactStore().put("a", -1, "code", "")


def test_parse_recalls_reads_whole_lines_in_order_once():
    reply = "Let me look back.\nRECALL parse/1/code\n  RECALL log  \nRECALL parse/1/code\nI will RECALL nothing here"
    assert parse_recalls(reply) == ["parse/1/code", "log"]
    assert parse_recalls("no requests") == []


def test_answer_recalls_returns_the_artifacts_or_what_is_available(store):
    answers = answer_recalls(store, "RECALL parse/1/code\nRECALL parse/code\nRECALL log\nRECALL parse/7/code")
    assert [m.role for m in answers] == ["user"] * 4
    assert answers[0].content == "RECALL parse/1/code:\ndef parse(line): return line"
    assert answers[1].content.endswith("line.split(',')")
    assert answers[2].content == "RECALL parse/1/log:\nIndexError"
    assert "no such artifact; available: parse/1/code, parse/1/log, parse/2/code, total/3/code" in answers[3].content
    assert "available: none yet" in answer_recalls(ArtifactStore(), "RECALL code")[0].content
