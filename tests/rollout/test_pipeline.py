"""Overlapped episodes, env deadlines and the watchdogs that cut runaway attempts."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from tempering.rollout import Budget, HFClient, run_episodes
from tempering.rollout.fake import ScriptedClient
from tempering.types import Message, SamplingParams, StepResult, Task

TASKS = [Task(id=f"t{i}", domain="test", prompt=(Message("user", f"Task number {i}: fix it."),), reference=None)
         for i in range(6)]


class SlowEnv:
    """Never satisfied; each step takes a task-dependent few milliseconds, so in overlap
    mode episodes finish their turns in a different order than they started them."""

    id = "test/slow-v0"

    def reset(self, task):
        self.task, self.turn = task, 0
        return list(task.prompt)

    def step(self, action):
        self.turn += 1
        time.sleep(0.002 * (int(self.task.id[1:]) % 3))
        return StepResult((Message("user", f"Still wrong after {self.turn} tries."),), 0.1 * self.turn, False, False,
                          {"progress": self.turn})


def test_overlap_gives_the_same_trajectories_as_rounds(tiny):
    client = HFClient(tiny.model, tiny.tokenizer, max_batch=4)  # fewer slots than episodes: rows join mid-decode
    params = SamplingParams(temperature=1.0, max_new_tokens=7, seed=11)
    budget = Budget(max_turns=3)
    rounds = run_episodes(SlowEnv, TASKS, client, params, budget)
    overlap = run_episodes(SlowEnv, TASKS, client, params, budget, overlap=True)
    assert [t.token_ids for t in rounds] == [t.token_ids for t in overlap]
    assert [t.loss_mask for t in rounds] == [t.loss_mask for t in overlap]
    assert [t.stop_reason for t in overlap] == ["turns"] * len(TASKS)
    assert len({t.token_ids[t.prompt_len:] for t in overlap}) == len(TASKS)  # really sampled


class HangingEnv(SlowEnv):
    """Task t1 hangs forever in step; t2 raises."""

    release = threading.Event()

    def step(self, action):
        if self.task.id == "t1":
            self.release.wait()
        if self.task.id == "t2":
            raise RuntimeError("sandbox connection lost")
        return super().step(action)


@pytest.mark.parametrize("overlap", [False, True])
def test_a_hanging_env_is_cut_at_its_deadline_and_the_rest_completes(tiny, overlap):
    client = HFClient(tiny.model, tiny.tokenizer)
    t = time.monotonic()
    out = run_episodes(HangingEnv, TASKS[:4], client, SamplingParams(temperature=1.0, max_new_tokens=5, seed=0),
                       Budget(max_turns=2, env_step_s=3), overlap=overlap)
    took = time.monotonic() - t
    assert [o.stop_reason for o in out] == ["turns", "env_timeout", "env_error", "turns"]
    assert "3 s deadline" in out[1].turns[-1].info["error"]
    assert "RuntimeError: sandbox connection lost" in out[2].turns[-1].info["error"]
    assert len(out[0].turns) == len(out[3].turns) == 2
    assert took < 300  # returned at all: the hung step did not hold the loop


class ScriptedEnv(SlowEnv):
    def __init__(self, infos):
        self.infos = infos

    def step(self, action):
        self.turn += 1
        return StepResult((Message("user", "again"),), 0.0, False, False, self.infos[self.turn - 1])


@pytest.mark.parametrize("budget, infos, reason, turns", [
    (Budget(max_turns=9, max_repeats=3), [{}] * 9, "repeated_action", 3),
    (Budget(max_turns=9, max_env_timeouts=2), [{"status": "timeout"}, {"status": "failed"}, {"status": "timeout"},
                                               {"status": "timeout"}] + [{}] * 5, "timeouts", 4),
    (Budget(max_turns=9, patience=2), [{"progress": p} for p in (0.2, 0.5, 0.5, 0.6, 0.6, 0.4, 0.9, 1, 1)],
     "no_progress", 6),
    (Budget(max_turns=9, wall_s=0.0), [{}] * 9, "wall_time", 1),
])
def test_watchdogs_cut_runaway_attempts_with_a_reason(tiny, budget, infos, reason, turns):
    out = run_episodes(lambda: ScriptedEnv(infos), TASKS[:1], ScriptedClient(tiny.tokenizer, ["print(1)"], repeat_last=True),
                       SamplingParams(max_new_tokens=16), budget)[0]
    assert (out.stop_reason, len(out.turns)) == (reason, turns)
    assert not out.terminated and out.truncated


class ShortMemoryEnv(SlowEnv):
    """SlowEnv that restates its conversation in one short message when asked to."""

    def context_messages(self, count_tokens, budget):
        return [*self.task.prompt, Message("user", f"Recap: {self.turn} tries, all wrong.")]


@pytest.mark.parametrize("overlap", [False, True])
def test_past_the_context_budget_an_episode_goes_on_from_the_envs_compressed_prompt(tiny, overlap):
    from tempering.rollout.hf import chat_prompt_ids
    from tempering.trainer.logprobs import full_sequence_logprobs

    client = HFClient(tiny.model, tiny.tokenizer, max_batch=4)
    params = SamplingParams(temperature=1.0, max_new_tokens=6, seed=3)
    recap = chat_prompt_ids(tiny.tokenizer, [*TASKS[0].prompt, Message("user", "Recap: 1 tries, all wrong.")])
    budget = Budget(max_turns=4, context_budget=len(recap) + 2)
    trajs = run_episodes(ShortMemoryEnv, TASKS[:3], client, params, budget, overlap=overlap)
    plain = run_episodes(SlowEnv, TASKS[:3], client, params, Budget(max_turns=4))
    for t, p, task in zip(trajs, plain, TASKS):
        assert len(t.segments) == 3 and [u.segment for u in t.turns] == [0, 1, 2, 3]
        assert t.token_ids[:t.prompt_len] == p.token_ids[:p.prompt_len]
        assert t.token_ids[t.turns[0].span[0]:t.turns[0].span[1]] == p.token_ids[p.turns[0].span[0]:p.turns[0].span[1]]
        for k, seg in enumerate(t.segments, start=1):  # each stretch starts from the env's recap
            expected = chat_prompt_ids(tiny.tokenizer, [*task.prompt, Message("user", f"Recap: {k} tries, all wrong.")])
            assert seg.prompt_ids == tuple(expected)
            # its tokens were sampled from that prompt: their log-probs are the model's given it
            lp = full_sequence_logprobs(tiny.model, seg.prompt_ids, [seg.token_ids]).logp[0]
            on = torch.tensor(seg.loss_mask, dtype=torch.bool)
            assert on.any() and torch.allclose(lp[on], torch.tensor(seg.logprobs)[on], atol=1e-4)
    # the generated tokens are all there, each once: nothing lost at a compression
    assert [sum(t.loss_mask) + sum(sum(s.loss_mask) for s in t.segments) for t in trajs] == \
        [sum(u.span[1] - u.span[0] for u in t.turns) for t in trajs]


def test_an_episode_whose_task_cannot_fit_the_context_budget_ends_as_context(tiny):
    client = HFClient(tiny.model, tiny.tokenizer, max_batch=4)
    params = SamplingParams(temperature=1.0, max_new_tokens=6, seed=3)
    trajs = run_episodes(ShortMemoryEnv, TASKS[:2], client, params, Budget(max_turns=4, context_budget=5))
    assert [(t.stop_reason, len(t.turns), t.segments) for t in trajs] == [("context", 1, ())] * 2
