"""Every RL algorithm runs end to end on the tiny model, and DAPO's dynamic sampling
never hands the update a group without reward variance."""

from __future__ import annotations

import math

import pytest
import torch

from tempering.config import load_config
from tempering.trainer import prepare_run, train


def _cfg(**over):
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in over.items()])


@pytest.mark.parametrize("name,extra", [
    # a random model runs into the 16-token budget almost every time, so DAPO's overlong filter
    # would leave nothing to train on here; test_overlong_filter_masks_truncated_attempts covers it
    ("grpo", {}), ("dr_grpo", {}), ("dapo", {"rollout.max_rounds_per_step": 2, "algorithm.overlong_filter": "false"}),
    ("rloo", {}),
    ("reinforce_pp", {}), ("ppo", {"algorithm.beta": 0.05}),
    ("grpo", {"algorithm.beta": 0.05, "algorithm.kl_in": "reward", "algorithm.kl_target": 0.01, "algorithm.entropy_coef": 0.01,
              "algorithm.epochs": 2, "optim.schedule": "cosine"}),
])
def test_each_algorithm_trains(tmp_path, name, extra, parity_env):
    cfg = _cfg(**{"algorithm.name": name, "algorithm.beta": 0, "algorithm.drop_zero_variance": "false", **extra})
    if name == "dapo":  # dynamic sampling on, as DAPO does
        cfg = _cfg(**{"algorithm.name": name, "algorithm.beta": 0, "algorithm.drop_zero_variance": "true", **extra})
    prepare_run(cfg, tmp_path)
    metrics = train(cfg, tmp_path, steps=2, progress=False, env=parity_env)
    assert [m["step"] for m in metrics] == [1, 2]
    trained = [m for m in metrics if "grad_norm" in m]
    assert trained and all(math.isfinite(m["loss"]) for m in trained)
    assert any(m["grad_norm"] > 0 for m in trained)
    if cfg.algorithm.epochs == 1:  # the ratio is exactly 1 on the first (only) epoch: nothing is clipped
        assert all(m["clip_frac"] == 0.0 for m in trained)
    if name == "ppo":
        assert all("value_loss" in m and "kl" in m for m in trained)
        assert abs(trained[0]["kl"]) < 1e-6  # policy == reference before the first update
        assert (tmp_path / "checkpoints" / "step-2" / "critic" / "optimizer.pt").is_file()
    if extra.get("algorithm.kl_target"):  # the adaptive coefficient moved after the first step
        assert trained[0]["beta"] == 0.05 and trained[-1]["beta"] != 0.05 and "kl" in trained[-1]


def test_dynamic_sampling_never_yields_a_zero_variance_group(tiny, parity_env):
    from tempering.trainer.rl import RLStep

    cfg = _cfg(**{"algorithm.name": "dapo", "algorithm.drop_zero_variance": "true", "rollout.prompts_per_step": 4, "rollout.max_rounds_per_step": 3,
                  "rollout.min_informative_groups": 3})
    opt = torch.optim.SGD(tiny.model.parameters(), lr=0.0)
    step = RLStep(cfg, parity_env, tiny.model, tiny.tokenizer, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0))
    seen_uninformative = False
    for k in range(1, 4):
        batch, sampled, _ = step.collect(k)
        assert all(max(g.rewards) > min(g.rewards) for g in batch)
        seen_uninformative |= any(not g.informative for g in sampled)
    assert seen_uninformative  # there were zero-variance groups to drop


def test_overlong_filter_masks_truncated_attempts(tiny, parity_env):
    from tempering.trainer.rl import Group, RLStep
    from tempering.types import Completion, Score

    def mask(filter_on: bool):
        cfg = _cfg(**{"algorithm.name": "dapo", "algorithm.overlong_filter": str(filter_on).lower()})
        opt = torch.optim.SGD(tiny.model.parameters(), lr=0.0)
        step = RLStep(cfg, parity_env, tiny.model, tiny.tokenizer, opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0))
        comps = [Completion("", (1,), (4, 5, 6), (0.0,) * 3, "length"), Completion("", (1,), (7, 8), (0.0,) * 2, "stop")]
        return step._mask(Group.from_completions(None, None, comps, [Score(1.0, True), Score(0.0, False)])).tolist()

    assert mask(True) == [[0, 0, 0], [1, 1, 0]]
    assert mask(False) == [[1, 1, 1], [1, 1, 0]]


@pytest.mark.parametrize("name", ["grpo", "reward_model"])
def test_lora_for_rl_and_the_reward_model(tmp_path, name, parity_env):
    sets = {"algorithm.name": name, "algorithm.beta": 0, "lora.rank": 4, "algorithm.drop_zero_variance": "false"}
    if name == "reward_model":
        rows = [{"prompt": "Is 2 even?", "chosen": "Yes.", "rejected": "No."}] * 4
        data = tmp_path / "pairs.jsonl"
        data.write_text("".join(__import__("json").dumps(r) + "\n" for r in rows))
        sets = {**sets, "data.path": str(data), "data.batch_size": 2}
        del sets["algorithm.drop_zero_variance"]
    cfg = _cfg(**sets)
    prepare_run(cfg, tmp_path / "run")
    metrics = train(cfg, tmp_path / "run", steps=2, progress=False, env=parity_env)
    assert any(m.get("grad_norm", 0) > 0 for m in metrics)
    adapter = tmp_path / "run" / "checkpoints" / "step-2" / "adapter_model.safetensors"
    assert adapter.is_file() and not (adapter.parent / "model.safetensors").exists()  # only the adapter is saved
