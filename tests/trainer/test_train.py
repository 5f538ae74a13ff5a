"""The tiny GRPO run end to end: metrics, HF checkpoints, resume, exact continuation."""

import json
import random

import pytest
import torch
from transformers import AutoModelForCausalLM

from tempering.config import load_config
from tempering.envs import SingleTurnEnv
from tempering.errors import RunDirError
from tempering.trainer import prepare_run, train
from tempering.types import Message, Score, Task


def _parity_env() -> SingleTurnEnv:
    """A test env whose reward a random model earns about half the time: an even count of 'e's."""
    def generate(rng: random.Random, family):
        return Task(id="", domain="test", prompt=(Message("user", f"Say something about {rng.randint(0, 10**9)}."),), reference=None)

    def verify(task, response):
        ok = response.count("e") % 2 == 0
        return Score(float(ok), ok)

    return SingleTurnEnv("test/parity-v1", generate, verify, lambda t: "ok")


def _cfg(**over):
    sets = [f"{k}={v}" for k, v in over.items()]
    return load_config("configs/tiny-cpu.yaml", sets)


def _weights(path):
    return AutoModelForCausalLM.from_pretrained(path).state_dict()


def test_tiny_run_writes_metrics_and_loadable_checkpoints(tmp_path):
    cfg = _cfg()
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=2, progress=False)
    assert [m["step"] for m in metrics] == [1, 2]
    lines = [json.loads(x) for x in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    for key in ("reward_mean", "reward_std", "pass_rate", "kl", "entropy", "response_len", "tokens_per_s",
                "time_generate", "time_score", "time_update"):
        assert key in lines[-1], key
    ckpt = tmp_path / "checkpoints" / "step-2"
    assert AutoModelForCausalLM.from_pretrained(ckpt) is not None  # plain transformers loads it
    assert (tmp_path / "config.yaml").is_file()


def test_resume_continues_and_matches_an_uninterrupted_run(tmp_path):
    """4 steps in one go == 2 steps, stop, resume, 2 more: bitwise-equal weights and equal rewards."""
    cfg = _cfg(**{"algorithm.drop_zero_variance": "true", "rollout.min_informative_groups": 1})
    env = _parity_env()
    straight, split = tmp_path / "straight", tmp_path / "split"
    for d in (straight, split):
        prepare_run(cfg, d)
    a = train(cfg, straight, steps=4, progress=False, env=env)
    b = train(cfg, split, steps=2, progress=False, env=env)
    b += train(cfg, split, steps=4, resume=True, progress=False, env=env)
    assert [m["step"] for m in b] == [1, 2, 3, 4]
    assert [m["reward_mean"] for m in a] == [m["reward_mean"] for m in b]
    assert any(m["groups_trained"] > 0 and m["grad_norm"] > 0 for m in a)  # the weights really moved
    wa, wb = _weights(straight / "checkpoints" / "step-4"), _weights(split / "checkpoints" / "step-4")
    assert all(torch.equal(wa[k], wb[k]) for k in wa)
    start = _weights(straight / "checkpoints" / "step-3")  # keep_checkpoints=2 keeps steps 3 and 4
    assert any(not torch.equal(wa[k], start[k]) for k in wa)
    lines = (split / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(x)["step"] for x in lines] == [1, 2, 3, 4]


def test_existing_run_dir_is_refused_and_resume_needs_a_run(tmp_path):
    cfg = _cfg()
    prepare_run(cfg, tmp_path)
    train(cfg, tmp_path, steps=1, progress=False)
    with pytest.raises(RunDirError, match="--resume"):
        prepare_run(cfg, tmp_path)
    with pytest.raises(RunDirError):
        train(cfg, tmp_path / "nothing", steps=1, resume=True, progress=False)


def test_scale_rewards_switches_between_grpo_and_dr_grpo_advantages(tiny):
    """algorithm.scale_rewards=false must reach the update (Dr. GRPO: centred, not divided by std)."""
    from tempering.trainer.rl import Group, GRPOStep
    from tempering.types import Completion

    def grad_norm(scale: bool) -> float:
        cfg = _cfg(**{"algorithm.scale_rewards": str(scale).lower(), "algorithm.beta": 0, "optim.grad_clip": 1e9})
        opt = torch.optim.SGD(tiny.model.parameters(), lr=0.0)  # measure the gradient, change nothing
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        step = GRPOStep(cfg, _parity_env(), tiny.model, tiny.tokenizer, opt, sched)
        comps = [Completion("", (1, 2, 3), (4 + i, 5), (0.0, 0.0), "length") for i in range(4)]
        group = Group(task=None, family=None, completions=comps, rewards=[1.0, 0.0, 0.0, 0.0], passed=[True] + [False] * 3)
        return step.update([group])["grad_norm"]

    # rewards [1,0,0,0]: centred advantages are divided by std 0.5 under GRPO, so gradients double.
    assert grad_norm(True) == pytest.approx(2 * grad_norm(False), rel=1e-3)
