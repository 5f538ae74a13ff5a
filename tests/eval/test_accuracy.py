"""Greedy evaluation (eval/accuracy.py): an answer whose sandbox failed on every try is an
infrastructure failure, counted apart from wrong answers and left out of the accuracy."""

from __future__ import annotations

import json

from tempering.envs.fake import sandboxed_parity_env
from tempering.eval import evaluate
from tempering.rollout.fake import ScriptedClient
from tempering.sandbox.fake import LosingSandbox


def test_infra_failures_are_counted_apart_from_wrong_answers(tiny, tmp_path):
    replies = ["ee 1", "e 2", "BROKEN 3", "FLAKY ee 4", "BROKEN e 5"]  # right, wrong, lost, right on retry, lost
    box = LosingSandbox()
    result = evaluate(ScriptedClient(tiny.tokenizer, replies), sandboxed_parity_env(box), n=5, max_new_tokens=16,
                      progress=False)
    assert (result.n, result.infra_failed, result.scored, result.correct) == (5, 2, 3, 2)
    assert result.accuracy == 2 / 3  # over the answers really scored, not 2 / 5
    assert [i["infra_failed"] for i in result.items] == [False, False, True, False, True]
    assert box.calls["BROKEN 3"] == 3 and box.calls["FLAKY ee 4"] == 2  # rollout.infra_retries' default
    assert "2 of 5 not scored" in result.summary() and "(2/3)" in result.summary()
    result.write_json(tmp_path / "r.json")
    saved = json.loads((tmp_path / "r.json").read_text())
    assert (saved["infra_failed"], saved["scored"], saved["n"], saved["correct"]) == (2, 3, 5, 2)


def test_without_infra_failures_the_result_reads_as_before(tiny):
    result = evaluate(ScriptedClient(tiny.tokenizer, ["ee 1", "e 2"]), sandboxed_parity_env(LosingSandbox()), n=2,
                      max_new_tokens=16, progress=False)
    assert (result.infra_failed, result.scored, result.accuracy) == (0, 2, 0.5)
    assert result.summary().startswith("test/sandboxed-parity-v1 [test] accuracy 50.0% (1/2), 95% CI") \
        and "not scored" not in result.summary()


def test_off_a_terminal_an_evaluation_says_how_far_it_is(tiny, capsys):
    """With `log`, a line at most every 30 s between batches and one at the end: answered so far,
    passed so far, ETA; the pipeline's eval stages pass it."""
    replies = ["ee 1", "e 2", "ee 3"]  # right, wrong, right
    result = evaluate(ScriptedClient(tiny.tokenizer, replies), sandboxed_parity_env(LosingSandbox()), n=3,
                      max_new_tokens=16, batch_size=2, progress=False, log="[eval-sft] test/sandboxed-parity-v1 test")
    lines = capsys.readouterr().out.splitlines()
    assert result.correct == 2
    assert lines[-1].startswith("[eval-sft] test/sandboxed-parity-v1 test: 3/3 answered, 2 passed, ETA 0.0 min")
    assert all("answered" in line for line in lines)
