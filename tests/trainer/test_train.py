"""The tiny GRPO run end to end: metrics, HF checkpoints, resume, exact continuation."""

import json

import pytest
import torch
from transformers import AutoModelForCausalLM

from tempering.config import load_config
from tempering.errors import RunDirError
from tempering.trainer import prepare_run, train
from tempering.types import Score


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


def test_resume_continues_and_matches_an_uninterrupted_run(tmp_path, parity_env):
    """4 steps in one go == 2 steps, stop, resume, 2 more: bitwise-equal weights and equal rewards."""
    cfg = _cfg(**{"algorithm.drop_zero_variance": "true", "rollout.min_informative_groups": 1})
    env = parity_env
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


def test_grpo_and_dr_grpo_differ_by_the_std_division(tiny, parity_env):
    """The algorithm name reaches the update: with the same aggregation, GRPO's advantages
    are Dr. GRPO's divided by the group std."""
    from tempering.trainer.rl import Group, RLStep
    from tempering.types import Completion

    def grad_norm(name: str) -> float:
        cfg = _cfg(**{"algorithm.name": name, "algorithm.loss_agg": "token_mean", "algorithm.beta": 0,
                      "optim.grad_clip": 1e9})
        opt = torch.optim.SGD(tiny.model.parameters(), lr=0.0)  # measure the gradient, change nothing
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        step = RLStep(cfg, parity_env, tiny.model, tiny.tokenizer, opt, sched)
        comps = [Completion("", (1, 2, 3), (4 + i, 5), (0.0, 0.0), "length") for i in range(4)]
        scores = [Score(1.0, True)] + [Score(0.0, False)] * 3
        return step.update([Group.from_completions(None, None, comps, scores)])["grad_norm"]

    # rewards [1,0,0,0]: centred advantages are divided by std 0.5 under GRPO, so gradients double.
    assert grad_norm("grpo") == pytest.approx(2 * grad_norm("dr_grpo"), rel=1e-3)
