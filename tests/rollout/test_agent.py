"""run_episode: token-in/token-out across turns, and a loss mask on model tokens only."""

from __future__ import annotations

import pytest

from tempering.rollout import Budget, HFClient, run_episode
from tempering.rollout.agent import _render
from tempering.rollout.fake import ScriptedClient
from tempering.types import Message, SamplingParams, StepResult, Task


class FixItEnv:
    """Says what is wrong until the reply contains 'fixed', then pays 1."""

    id = "test/fixit-v0"

    def reset(self, task):
        self.turn = 0
        return list(task.prompt)

    def step(self, action):
        self.turn += 1
        if "fixed" in action:
            return StepResult((), 1.0, True, False, {"code": action, "log": "all tests passed"})
        return StepResult((Message("user", f"Error on turn {self.turn}: NameError: name 'x' is not defined"),),
                          0.0, False, False, {"code": action, "log": "NameError"})


TASK = Task(id="t0", domain="test", prompt=(Message("system", "You fix code."), Message("user", "Write f.")),
            reference=None)


def test_round_trip_and_mask_over_three_turns(tiny):
    tok = tiny.tokenizer
    replies = ["def f():\n    return x", "def f():\n    return y  # still", "def f():\n    return 1  # fixed"]
    client = ScriptedClient(tok, replies)
    traj = run_episode(FixItEnv(), TASK, client, SamplingParams(temperature=0.0, max_new_tokens=64), Budget(max_turns=5))
    assert traj.terminated and traj.stop_reason == "terminated" and traj.reward == 1.0
    assert [t.reward for t in traj.turns] == [0.0, 0.0, 1.0]
    assert [t.info["code"] for t in traj.turns] == replies  # every code version is kept
    # The ids are exactly the conversation the chat template renders (up to the final
    # newline the model never generates).
    text = tok.decode(list(traj.token_ids))
    full = _render(tok, traj.messages, False)
    assert full == text + "\n"
    # The mask covers each reply and its end-of-turn token, and nothing else.
    masked = [i for i, m in enumerate(traj.loss_mask) if m]
    spans = [i for t in traj.turns for i in range(*t.span)]
    assert masked == spans
    for turn, reply in zip(traj.turns, replies):
        assert tok.decode(list(traj.token_ids[slice(*turn.span)])) == reply + "<|im_end|>"
    unmasked = tok.decode([t for t, m in zip(traj.token_ids, traj.loss_mask) if not m])
    assert "NameError" in unmasked and "You fix code." in unmasked and "return x" not in unmasked
    # Each turn was prompted with exactly the tokens so far: token-in, not re-rendered text.
    for call, turn in zip(client.prompts, traj.turns):
        assert call == list(traj.token_ids[: turn.span[0]])
    assert all(lp == -0.5 for lp, m in zip(traj.logprobs, traj.loss_mask) if m)
    assert all(lp == 0.0 for lp, m in zip(traj.logprobs, traj.loss_mask) if not m)


def test_a_reply_cut_by_the_token_limit_still_closes_the_turn(tiny):
    tok = tiny.tokenizer
    client = ScriptedClient(tok, ["def f(", "def f():\n    return 1  # fixed"], cut={0})
    traj = run_episode(FixItEnv(), TASK, client, SamplingParams(max_new_tokens=64))
    assert tok.decode(list(traj.token_ids)) + "\n" == _render(tok, traj.messages, False)
    first = traj.turns[0]
    assert tok.decode(list(traj.token_ids[slice(*first.span)])) == "def f("
    assert traj.loss_mask[first.span[1]] == 0  # the <|im_end|> the model did not write is not trained on


@pytest.mark.parametrize("budget,reason", [(Budget(max_turns=2), "turns"), (Budget(max_new_tokens=12), "tokens")])
def test_budgets_end_the_episode_as_truncated(tiny, budget, reason):
    client = ScriptedClient(tiny.tokenizer, ["def f():\n    return x"] * 5)
    traj = run_episode(FixItEnv(), TASK, client, SamplingParams(max_new_tokens=64), budget)
    assert traj.truncated and not traj.terminated and traj.stop_reason == reason
    assert sum(traj.loss_mask) <= budget.max_new_tokens


def test_real_client_two_turns(tiny):
    client = HFClient(tiny.model, tiny.tokenizer)
    traj = run_episode(FixItEnv(), TASK, client, SamplingParams(temperature=1.0, max_new_tokens=8, seed=0),
                       Budget(max_turns=2))
    assert len(traj.turns) == 2 and len(traj.token_ids) == len(traj.loss_mask) == len(traj.logprobs)
    assert sum(traj.loss_mask) == sum(e - s for s, e in (t.span for t in traj.turns))


def test_repair_episode_end_to_end(tiny, shared_sandbox):
    from tempering.envs.code.envs import RepairEnv

    env = RepairEnv(max_turns=3)
    task = env.task("train", 2, family="count_vowels")
    replies = ["```python\ndef count_vowels(s):\n    return len(s)\n```",
               "```python\ndef count_vowels(s):\n    return sum(c in 'aeiouAEIOU' for c in s)\n```"]
    traj = run_episode(env, task, ScriptedClient(tiny.tokenizer, replies), SamplingParams(max_new_tokens=128))
    assert traj.terminated and traj.reward == 1.0 and len(traj.turns) == 2
    assert [t.info["code"] for t in traj.turns] == replies  # each code version
    assert traj.turns[0].info["visible"]["status"] == "failed"  # and its execution record
    assert "expected" in traj.turns[0].feedback[0].content
    fb = tiny.tokenizer.decode([t for t, m in zip(traj.token_ids, traj.loss_mask) if not m])
    assert "Your code failed an example" in fb


def test_batched_episodes_match_single_ones(tiny):
    client = HFClient(tiny.model, tiny.tokenizer)
    params = SamplingParams(temperature=0.0, max_new_tokens=6)
    tasks = [TASK, Task(id="t1", domain="test", prompt=(Message("user", "Another one."),), reference=None)]
    from tempering.rollout import run_episodes

    batched = run_episodes(FixItEnv, tasks, client, params, Budget(max_turns=3))
    single = [run_episode(FixItEnv(), t, client, params, Budget(max_turns=3)) for t in tasks]
    assert [b.token_ids for b in batched] == [s.token_ids for s in single]
    assert [b.loss_mask for b in batched] == [s.loss_mask for s in single]


@pytest.mark.parametrize("overlap", [False, True])
def test_later_turns_reuse_the_last_turns_cache_and_sample_the_same(tiny, overlap):
    """With the client's prefix store, a turn prefills only the feedback on top of the
    previous turn's KV cache: the same tokens, log-probs that match a full forward pass of the
    whole conversation, and fewer prompt tokens through the model."""
    import torch

    from tempering.rollout import run_episodes

    params = SamplingParams(temperature=1.0, max_new_tokens=10, seed=3)
    tasks = [TASK, Task(id="t1", domain="test", prompt=(Message("user", "Another one."),), reference=None)] * 2
    counted = {}

    def play(prefix_bytes: int):
        client = HFClient(tiny.model, tiny.tokenizer, prefix_bytes=prefix_bytes)
        engine = client.engine
        engines = []
        client.engine = lambda p: engines.append(engine(p)) or engines[-1]  # count what each engine prefilled
        trajs = run_episodes(FixItEnv, tasks, client, params, Budget(max_turns=3), overlap=overlap)
        counted[prefix_bytes] = sum(e.prefilled for e in engines)
        return client, trajs

    plain_client, plain = play(0)
    client, reused = play(1 << 30)
    assert plain_client.prefixes is None and client.prefixes.hits == 2 * len(tasks)  # turns 2 and 3 of each
    assert not client.prefixes.entries and not client.prefixes.active  # let go after the episodes
    assert [t.token_ids for t in reused] == [t.token_ids for t in plain]
    assert counted[1 << 30] < counted[0]
    for traj in reused:
        ids = torch.tensor([list(traj.token_ids)])
        with torch.no_grad():
            logits = tiny.model(ids).logits[0, :-1].float() / params.temperature
        full = torch.log_softmax(logits, -1).gather(1, ids[0, 1:, None])[:, 0]
        mask = torch.tensor(traj.loss_mask[1:], dtype=torch.bool)
        assert torch.allclose(full[mask], torch.tensor(traj.logprobs[1:])[mask], atol=1e-4)


def test_the_prefix_store_hands_out_the_longest_prefix_once_and_keeps_to_its_bytes():
    import torch

    from tempering.rollout.prefix import PrefixStore

    def kv(n):  # two layers of (1, heads, n, dim) keys and values: 4 * n * 4 * 4 bytes
        return [(torch.full((1, 1, n, 4), float(n)), torch.zeros(1, 1, n, 4)) for _ in range(2)]

    store = PrefixStore(max_bytes=4 * 16 * 10)
    store.put((1, 2), kv(2))
    store.put((1, 2, 3, 4), kv(4))
    assert store.take((9, 1, 2)) is None
    got = store.take((1, 2, 3, 4, 5))
    assert got[0][0].shape[2] == 4 and float(got[0][0][0, 0, 0, 0]) == 4.0  # the longer prefix
    assert (1, 2, 3, 4) not in store.entries  # handed out once
    assert store.take((1, 2))[0][0].shape[2] == 1  # a whole-prompt match leaves one token to prefill
    store.put((5,) * 6, kv(6))
    store.put((6,) * 5, kv(5))  # 6 + 5 tokens > 10: the oldest goes
    assert list(store.entries) == [(6,) * 5] and store.bytes == 4 * 16 * 5
    store.discard((6,) * 7)
    assert not store.entries and store.bytes == 0


class LostSandboxEnv(FixItEnv):
    """FixItEnv whose sandbox is lost on turn `lost_on` for `failures` tries."""

    def __init__(self, lost_on: int, failures: int) -> None:
        self.lost_on, self.failures = lost_on, failures

    def step(self, action):
        result = super().step(action)
        if self.turn == self.lost_on and self.failures > 0:
            self.failures -= 1
            return StepResult((Message("user", "?"),), 0.0, False, False, {"status": "sandbox_error"})
        return result


@pytest.mark.parametrize("failures,stop", [(9, "infra"), (1, "terminated")])
def test_a_step_whose_sandbox_fails_every_try_ends_the_episode_as_infra(tiny, failures, stop):
    from tempering.envs.infra import InfraRetry

    replies = ["def f():\n    return x", "def f():\n    return 1  # fixed"]
    env = InfraRetry(LostSandboxEnv(lost_on=2, failures=failures), 2)
    traj = run_episode(env, TASK, ScriptedClient(tiny.tokenizer, replies), SamplingParams(temperature=0.0, max_new_tokens=64),
                       Budget(max_turns=5))
    assert traj.stop_reason == stop and len(traj.turns) == 2  # the reply was re-checked, never re-sampled
    assert traj.infra_failed == (stop == "infra") and [t.infra_failed for t in traj.turns] == [False, stop == "infra"]
    assert [t.infra_retries for t in traj.turns] == [0, min(failures, 2)] and traj.infra_retries == min(failures, 2)
    assert traj.reward == (1.0 if stop == "terminated" else 0.0)
