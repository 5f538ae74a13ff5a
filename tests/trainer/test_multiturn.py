"""GRPO over multi-turn episodes: loss on generated tokens only, per-turn pass rates."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tempering.config import load_config
from tempering.errors import ConfigError
from tempering.envs import SingleTurnEnv
from tempering.trainer import prepare_run, train
from tempering.trainer.logprobs import full_sequence_logprobs
from tempering.trainer.rl import Group, RLStep
from tempering.rollout.hf import chat_prompt_ids
from tempering.scheduler.store import STORE_FILE, Store
from tempering.types import Message, Segment, StepResult


class ParityRepairEnv(SingleTurnEnv):
    """The parity env (conftest) over up to 3 turns: an odd count of 'e's gets 'try again'
    until turn 3, then 0. A random model passes about half its attempts, so turns vary."""

    def __init__(self, parity: SingleTurnEnv):
        super().__init__("test/parity-repair-v1", parity._generate, parity.verify, parity.reference_response)
        self.turn = 0

    def reset(self, task):
        self.turn = 0
        return super().reset(task)

    def step(self, action):
        self.turn += 1
        score = self.verify(self._task, action)
        if score.passed or self.turn == 3:
            return StepResult((), score.value, True, False, {"passed": score.passed})
        return StepResult((Message("user", "Odd. Try again."),), 0.0, False, False, {"passed": False})


def _cfg(**over):
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in over.items()])


def test_multi_turn_run_reports_pass_rates_by_turn(tmp_path, parity_env):
    cfg = _cfg(**{"rollout.max_turns": 3, "rollout.prompts_per_step": 2, "rollout.group_size": 4})
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=2, progress=False, env=ParityRepairEnv(parity_env))
    for m in metrics:
        by_turn = [m[f"pass_by_turn_{k}"] for k in (1, 2, 3)]
        assert by_turn == sorted(by_turn) and by_turn[-1] == m["pass_rate"]
        assert 1.0 <= m["turns_mean"] <= 3.0
    assert any(m["turns_mean"] > 1.0 for m in metrics)  # some episodes took feedback
    assert any(m.get("grad_norm", 0) > 0 for m in metrics)  # and the weights were trained on them


def _padded(masks, like: torch.Tensor) -> torch.Tensor:
    """Per-row loss masks, right-padded with zeros to the shape of `like`."""
    mask = torch.zeros_like(like)
    for i, m in enumerate(masks):
        mask[i, : len(m)] = torch.tensor(m, dtype=mask.dtype)
    return mask


def test_feedback_and_template_tokens_carry_no_gradient(tiny, parity_env):
    """The update's gradient equals -sum(A * mask * grad log p) / sum(mask) computed by hand
    with the mask, so tokens with mask 0 contribute nothing."""
    cfg = _cfg(**{"algorithm.beta": 0, "optim.grad_clip": 1e9, "rollout.max_turns": 2, "algorithm.loss_agg": "token_mean"})
    model = tiny.model
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    step = RLStep(cfg, ParityRepairEnv(parity_env), model, tiny.tokenizer, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0))
    prompt = (1, 2, 3)
    sequences = [(10, 11, 12, 13, 14, 15), (20, 21, 22)]
    masks = [(1, 1, 0, 0, 1, 1), (1, 1, 1)]  # tokens 12, 13: feedback between two turns
    group = Group(None, None, prompt, sequences, masks, rewards=[1.0, 0.0], passed=[True, False], turns=[2, 1])
    step.update([group])
    got = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    def by_hand(masks):
        model.zero_grad(set_to_none=True)
        model.train()
        rewards = torch.tensor([1.0, 0.0])
        adv = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
        lp = full_sequence_logprobs(model, prompt, sequences, cfg.rollout.temperature)
        mask = _padded(masks, lp.mask)
        (-(adv[:, None] * lp.logp * mask).sum() / mask.sum()).backward()
        model.eval()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    def close(a, b):
        return a.keys() == b.keys() and all(torch.allclose(a[n], b[n], atol=1e-6, rtol=1e-3) for n in a)

    assert close(got, by_hand(masks))
    # The check can fail: counting the feedback tokens gives another gradient.
    assert not close(got, by_hand([(1,) * len(s) for s in sequences]))


def test_repair_env_trains_through_the_sandbox(tmp_path, shared_sandbox):
    """The real path: code/repair-v1 episodes run in the sandbox and feed back errors."""
    cfg = _cfg(**{"env.id": "code/repair-v1", "rollout.max_turns": 2, "rollout.prompts_per_step": 1,
                  "rollout.group_size": 2, "rollout.max_new_tokens": 8})
    prepare_run(cfg, tmp_path)
    (m,) = train(cfg, tmp_path, steps=1, progress=False)
    # A random model's code fails the examples, so every episode gets feedback and a second turn.
    assert m["turns_mean"] == 2.0 and m["pass_by_turn_2"] == 0.0 and m["reward_mean"] == 0.0
    assert m["time_score"] > 0  # time spent in the sandbox is measured apart from generation
    store = Store(tmp_path / STORE_FILE)
    # the env ended each episode at rollout.max_turns itself, grading it on the hidden tests
    episodes = list(store.episodes())
    assert {(e.stop_reason, e.turns) for e in episodes} == {("terminated", 2)}
    # every episode got feedback; the metric is the share whose second reply was the first again
    replies: dict = {}
    for step, round_, slot, turn, text in store.db.execute(
            "SELECT step, round, slot, turn, content FROM artifacts WHERE name = 'reply' ORDER BY turn"):
        replies.setdefault((step, round_, slot), []).append(text.strip())
    same = [replies[(e.step, e.round, e.slot)][0] == replies[(e.step, e.round, e.slot)][1] for e in episodes]
    assert m["repeated_after_feedback"] == sum(same) / len(same)
    store.close()


class CompressingParityEnv(ParityRepairEnv):
    """ParityRepairEnv that can restate its conversation in short form, as long envs do, and
    pays less for a later pass (so groups whose attempts all pass still differ)."""

    def step(self, action):
        result = super().step(action)
        return replace(result, reward=result.reward * (1.0 - 0.2 * (self.turn - 1)))

    def context_messages(self, count_tokens, budget):
        return [*self._task.prompt, Message("user", f"Earlier tries were odd ({self.turn} so far). Try again.")]


def test_later_stretches_train_with_their_attempts_advantage(tiny, parity_env):
    """A stretch on a compressed prompt adds -A_j * sum(mask * grad log p) over its own
    prompt to the loss, A_j being its attempt's advantage, normalised over all tokens."""
    cfg = _cfg(**{"algorithm.beta": 0, "optim.grad_clip": 1e9, "rollout.max_turns": 4, "algorithm.loss_agg": "token_mean"})
    model = tiny.model
    opt = torch.optim.SGD(model.parameters(), lr=0.0)
    step = RLStep(cfg, ParityRepairEnv(parity_env), model, tiny.tokenizer, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0))
    prompt, sequences, masks = (1, 2, 3), [(10, 11, 12, 13), (20, 21, 22)], [(1, 1, 0, 0), (1, 1, 1)]
    later = Segment((5, 6), (30, 31, 32, 33, 34), (1, 1, 0, 1, 1), (0.0,) * 5)  # attempt 0 went on from prompt (5, 6)
    group = Group(None, None, prompt, sequences, masks, rewards=[1.0, 0.0], passed=[True, False], turns=[3, 1],
                  truncated=[False, False], segments=[(later,), ()])
    step.update([group])
    got = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    def by_hand(segment_advantage_sign: float):
        model.zero_grad(set_to_none=True)
        model.train()
        rewards = torch.tensor([1.0, 0.0])
        adv = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
        lp = full_sequence_logprobs(model, prompt, sequences, cfg.rollout.temperature)
        mask = _padded(masks, lp.mask)
        seg_lp = full_sequence_logprobs(model, later.prompt_ids, [later.token_ids], cfg.rollout.temperature).logp[0]
        seg_mask = torch.tensor(later.loss_mask, dtype=mask.dtype)
        total = mask.sum() + seg_mask.sum()
        loss = -((adv[:, None] * lp.logp * mask).sum() + segment_advantage_sign * adv[0] * (seg_lp * seg_mask).sum()) / total
        loss.backward()
        model.eval()
        return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}

    def close(a, b):
        return a.keys() == b.keys() and all(torch.allclose(a[n], b[n], atol=1e-6, rtol=1e-3) for n in a)

    assert close(got, by_hand(1.0))
    assert not close(got, by_hand(-1.0))  # the stretch's sign matters: it really is in the loss


def test_context_budget_run_stores_and_trains_the_compressed_stretches(tmp_path, tiny, parity_env):
    restated = [Message("user", "Say something about 1000000000."), Message("user", "Earlier tries were odd (2 so far). Try again.")]
    budget = len(chat_prompt_ids(tiny.tokenizer, restated)) + 4  # a restated prompt fits; prompt + reply + feedback does not
    cfg = _cfg(**{"rollout.max_turns": 3, "rollout.prompts_per_step": 2, "rollout.group_size": 4,
                  "rollout.context_budget": budget, "rollout.max_new_tokens": 16})
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=1, progress=False, env=CompressingParityEnv(parity_env))
    store = Store(tmp_path / STORE_FILE)
    episodes = store.episodes()
    store.close()
    long = [e for e in episodes if e.turns > 1]
    assert long and all(len(e.segments) == e.turns - 1 for e in long)  # every feedback outgrew the budget
    assert all(len(s.prompt_ids) <= budget and sum(s.loss_mask) > 0 for e in long for s in e.segments)
    assert all(len(e.prompt_ids) + len(e.sequence) <= budget + 16 for e in long)  # no stretch outgrew budget + a reply
    assert all(not e.segments for e in episodes if e.turns == 1)
    assert metrics[0].get("grad_norm", 0) > 0


def test_context_budget_is_refused_where_it_cannot_train(tmp_path):
    with pytest.raises(ConfigError, match="context_budget"):
        prepare_run(_cfg(**{"rollout.context_budget": 100}), tmp_path / "a")  # single turn
    with pytest.raises(ConfigError, match="context_budget"):
        prepare_run(_cfg(**{"rollout.context_budget": 100, "rollout.max_turns": 3, "algorithm.name": "ppo"}), tmp_path / "b")


def test_multi_turn_envs_end_their_episodes_at_the_rollout_turn_budget():
    """An env that grades at its own last turn gets rollout.max_turns as that turn, so the
    rollout budget never cuts an attempt before it is graded."""
    from tempering import envs
    from tempering.config import EnvConfig

    assert envs.make_from_config(EnvConfig(id="code/repair-v1"), 5).max_turns == 5
    mixed = envs.make_from_config(EnvConfig(id="mix", mix={"code/repair-v1": 1.0, "math/arith-v1": 1.0}), 4)
    assert mixed.members["code/repair-v1"].max_turns == 4
    assert envs.make_from_config(EnvConfig(id="code/repair-v1")).max_turns == 3  # the env's own default otherwise


def test_an_attempt_that_repeats_its_reply_after_feedback_is_marked():
    """Group.repeated, behind the repeated_after_feedback metric: the second reply the same as the
    first (ends' whitespace aside) is a repeat; a changed one, or a single reply, is not."""
    from tempering.scheduler.store import EpisodeRecord
    from tempering.trainer.group import Group

    def record(slot, replies):
        return EpisodeRecord(step=1, round=0, slot=slot, task_id="t", domain="code", family=None, reward=0.0,
                             passed=False, turns=len(replies), truncated=False, stop_reason="terminated", env_s=0.0,
                             prompt_ids=(1,), sequence=(2,), mask=(1,),
                             turn_records=tuple({"reply": r} for r in replies))

    group = Group.from_records(None, None, [record(0, ["def f(): 1", "def f(): 1 "]), record(1, ["a", "b"]),
                                            record(2, ["a"])])
    assert group.repeated == [True, False, False]
