"""The unbiased pass@k estimator against hand-computed values."""

from __future__ import annotations

import random
from math import comb

import pytest

from tempering.errors import ConfigError
from tempering.eval.passk import evaluate_pass_at_k, pass_at_k
from tempering.types import Completion, Message, Score, Task


@pytest.mark.parametrize("n,c,k", [(20, 0, 1), (20, 1, 1), (20, 3, 10), (10, 10, 5), (5, 2, 5), (200, 17, 10)])
def test_matches_the_combinatorial_definition(n, c, k):
    assert pass_at_k(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k))


def test_hand_values():
    assert pass_at_k(20, 1, 1) == pytest.approx(0.05)
    assert pass_at_k(4, 2, 2) == pytest.approx(1 - 1 / 6)  # 1 - C(2,2)/C(4,2)
    assert pass_at_k(3, 0, 2) == 0.0 and pass_at_k(3, 2, 2) == 1.0


def test_bad_arguments():
    with pytest.raises(ValueError):
        pass_at_k(5, 6, 1)


class _Env:
    """Problem i passes a sample when the sample's text is even: the count depends on seeds."""

    id = "test/parity-v0"

    def tasks(self, split, n):
        return [Task(id=f"p{i}", domain="test", prompt=(Message("user", f"problem {i}"),), reference=None)
                for i in range(n)]

    def verify(self, task, text):
        return Score(value=float(int(text) % 2 == 0), passed=int(text) % 2 == 0, details={"status": "ok"})


class _Client:
    """Seeded fake sampler; optionally dies on its `die_at`-th call, as a killed run would."""

    def __init__(self, die_at: int | None = None):
        self.calls, self.die_at = 0, die_at

    def generate(self, prompts, params):
        self.calls += 1
        if self.calls == self.die_at:
            raise KeyboardInterrupt
        rng = random.Random(params.seed)
        return [Completion(text=str(rng.randrange(100)), prompt_ids=(), token_ids=(1, 2), logprobs=(0.0, 0.0),
                           finish_reason="stop") for _ in prompts for _ in range(params.n)]


def test_interrupted_evaluation_resumes_to_the_same_result(tmp_path):
    whole = evaluate_pass_at_k(_Client(), _Env(), "test", 7, 5, [1, 2], 0.8, 8, batch_size=2, seed=3)
    progress = tmp_path / "progress.jsonl"
    with pytest.raises(KeyboardInterrupt):
        evaluate_pass_at_k(_Client(die_at=3), _Env(), "test", 7, 5, [1, 2], 0.8, 8, batch_size=2, seed=3, progress=progress)
    assert len(progress.read_text().splitlines()) == 1 + 4  # settings + two chunks of two problems
    resumed_client = _Client()
    resumed = evaluate_pass_at_k(resumed_client, _Env(), "test", 7, 5, [1, 2], 0.8, 8, batch_size=2, seed=3,
                                 progress=progress)
    assert resumed_client.calls == 2  # only the two chunks not yet scored
    assert resumed.pass_at == whole.pass_at
    assert [p["correct"] for p in resumed.per_problem] == [p["correct"] for p in whole.per_problem]
    assert 0 < whole.pass_at[1] < 1


def test_progress_file_with_other_settings_is_refused(tmp_path):
    progress = tmp_path / "progress.jsonl"
    evaluate_pass_at_k(_Client(), _Env(), "test", 2, 5, [1], 0.8, 8, batch_size=2, progress=progress)
    with pytest.raises(ConfigError, match="temperature 0.8 there vs 1.0 now"):
        evaluate_pass_at_k(_Client(), _Env(), "test", 2, 5, [1], 1.0, 8, batch_size=2, progress=progress)


class _ParityEnv(_Env):
    def verify(self, task, text):
        ok = text.count("e") % 2 == 0
        return Score(value=float(ok), passed=ok, details={"status": "ok" if ok else "failed"})


class _Chunked:
    """The real client without its engine: the chunk-by-chunk path."""

    def __init__(self, client):
        self.client = client

    def generate(self, prompts, params):
        return self.client.generate(prompts, params)


def test_streaming_gives_the_chunked_result_and_resumes(tiny, tmp_path):
    from tempering.rollout import HFClient

    client = HFClient(tiny.model, tiny.tokenizer, max_batch=6)  # fewer slots than rows: problems stream through
    args = (_ParityEnv(), "test", 5, 4, [1, 2], 1.0, 6)
    streamed = evaluate_pass_at_k(client, *args, batch_size=2, seed=1)
    chunked = evaluate_pass_at_k(_Chunked(client), *args, batch_size=2, seed=1)
    assert streamed.per_problem == chunked.per_problem
    progress = tmp_path / "p.jsonl"
    evaluate_pass_at_k(client, _ParityEnv(), "test", 3, 4, [1, 2], 1.0, 6, batch_size=2, seed=1, progress=progress)
    resumed = evaluate_pass_at_k(client, *args, batch_size=2, seed=1, progress=progress)  # two more problems
    assert resumed.per_problem == streamed.per_problem
    assert len(progress.read_text().splitlines()) == 1 + 5
