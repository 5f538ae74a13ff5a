"""sft, dpo and reward_model: masks, packing, accumulation invariants, and exact resume
after kill -9 (also for RL)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

from tempering.config import load_config
from tempering.envs import make
from tempering.errors import ConfigError
from tempering.trainer import prepare_run, train
from tempering.trainer.data import load_pairs, pack, pad_batch, tokenize_chat
from tempering.trainer.make_data import sft_rows, write_jsonl
from tempering.types import Message

TIMING = {"time_step", "time_generate", "time_score", "time_update", "tokens_per_s", "episodes_reused"}


@pytest.fixture(scope="module")
def sft_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "sft.jsonl"
    write_jsonl(sft_rows(make("math/arith-v1"), "train", 24), path)
    return path


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory):
    """Pairs from arith tasks: the reference reply over a wrong one."""
    env = make("math/arith-v1")
    rows = [{"prompt": [m.as_dict() for m in t.prompt], "chosen": env.reference_response(t),
             "rejected": "I think the answer is 7.\nAnswer: 7"} for t in env.tasks("train", 24)]
    path = tmp_path_factory.mktemp("data") / "pairs.jsonl"
    write_jsonl(rows, path)
    return path


def _cfg(algorithm, data, **over):
    sets = {"algorithm.name": algorithm, "algorithm.beta": 0, "data.path": str(data), "data.batch_size": 4,
            "data.max_len": 128, "optim.lr": 1e-3, "train.save_every": 1, **over}
    return load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in sets.items()])


def test_sft_mask_covers_assistant_replies_and_their_end_tokens_only(tiny):
    tok = tiny.tokenizer
    msgs = [Message("system", "Be brief."), Message("user", "2+2?"), Message("assistant", "4"),
            Message("user", "and 3+3?"), Message("assistant", "6")]
    ex = tokenize_chat(tok, msgs)
    learned = tok.decode([t for t, m in zip(ex.ids, ex.mask) if m])
    assert learned == "4<|im_end|>6<|im_end|>"
    assert tok.decode(ex.ids) == tok.apply_chat_template([m.as_dict() for m in msgs], tokenize=False)


def test_an_assistant_reply_of_weight_0_is_context_not_a_target(tiny, tmp_path):
    """A repair demonstration's wrong attempt (weight 0) stays in the tokens the fix is learned
    after, and none of its tokens is learned; a weight on a user message is one clear error."""
    from tempering.trainer.data import load_examples

    tok = tiny.tokenizer
    msgs = [Message("user", "2+2?"), Message("assistant", "5", 0), Message("user", "No: 5 != 4."),
            Message("assistant", "4")]
    ex = tokenize_chat(tok, msgs)
    assert tok.decode([t for t, m in zip(ex.ids, ex.mask) if m]) == "4<|im_end|>"
    assert tok.decode(ex.ids) == tok.apply_chat_template([m.as_dict() for m in msgs], tokenize=False)
    assert "5<|im_end|>" in tok.decode(ex.ids)
    path = tmp_path / "sft.jsonl"
    path.write_text(json.dumps({"messages": [m.as_dict() for m in msgs]}) + "\n")
    assert load_examples(path, tok, 128)[0] == ex  # the weight travels through the JSONL file
    path.write_text(json.dumps({"messages": [{"role": "user", "content": "hi", "weight": 0},
                                             {"role": "assistant", "content": "hello"}]}) + "\n")
    with pytest.raises(ConfigError, match="only an assistant message takes 0"):
        load_examples(path, tok, 128)


def test_packing_gives_the_padded_batch_loss(tiny, sft_file):
    from tempering.trainer.data import load_examples

    examples = load_examples(sft_file, tiny.tokenizer, 128)[:5]
    model = tiny.model

    def loss(ids, mask, **kw):
        logits = model(input_ids=ids, **kw).logits
        logp = torch.log_softmax(logits[:, :-1].float(), -1).gather(-1, ids[:, 1:, None])[..., 0]
        return (logp * mask[:, 1:]).sum()

    ids, attn, mask = pad_batch(examples, 0)
    pids, pattn, pos, pmask = pack(examples, 512, 0)
    assert pids.shape[0] < ids.shape[0]  # fewer rows
    assert torch.allclose(loss(ids, mask, attention_mask=attn), loss(pids, pmask, attention_mask=pattn, position_ids=pos),
                          atol=1e-4)


@pytest.mark.parametrize("algorithm", ["sft", "dpo", "reward_model"])
def test_accumulation_1x8_equals_8x1(tmp_path, algorithm, sft_file, pairs_file):
    data = sft_file if algorithm == "sft" else pairs_file
    weights, norms = [], []
    for bs, accum in ((8, 1), (1, 8)):
        cfg = _cfg(algorithm, data, **{"data.batch_size": bs, "optim.grad_accum": accum, "data.shuffle": "false"})
        run = tmp_path / f"{bs}x{accum}"
        prepare_run(cfg, run)
        (m,) = train(cfg, run, steps=1, progress=False)
        assert m["grad_norm"] > 0
        norms.append(m["grad_norm"])
        weights.append(load_file(run / "checkpoints" / "step-1" / "model.safetensors"))
    assert norms[0] == pytest.approx(norms[1], rel=1e-4)  # the same gradient, at the same scale
    # Adam divides each element's step by its own gradient's size, so where that gradient is
    # near zero the summation order's float noise moves the step: weights agree to 1% of a
    # step (lr = 1e-3), not to 1e-6 (seen: 3e-6 on one element of 21 tensors on one machine)
    a, b = weights
    assert all(torch.allclose(a[k], b[k], atol=1e-5, rtol=1e-4) for k in a)


def test_dpo_and_reward_model_learn_the_pairs(tmp_path, pairs_file):
    for algorithm, key in (("dpo", "accuracy"), ("reward_model", "accuracy")):
        cfg = _cfg(algorithm, pairs_file, **{"data.batch_size": 8})
        run = tmp_path / algorithm
        prepare_run(cfg, run)
        metrics = train(cfg, run, steps=6, progress=False)
        assert metrics[-1]["loss"] < metrics[0]["loss"], algorithm
        assert metrics[-1][key] >= 0.75, (algorithm, [m[key] for m in metrics])


def test_epochs_set_the_steps_and_the_cosine_ends_with_the_data(tmp_path, sft_file):
    """24 rows, batches of 4 x grad_accum 2: 1.5 epochs is ceil(36 / 8) = 5 steps, and the
    rate reaches its floor (min_lr_ratio x lr) on the last one, not at train.steps."""
    cfg = _cfg("sft", sft_file, **{"train.epochs": 1.5, "train.steps": 1000, "optim.grad_accum": 2,
                                   "optim.schedule": "cosine", "optim.warmup_steps": 0, "optim.min_lr_ratio": 0.1})
    prepare_run(cfg, tmp_path / "run")
    metrics = train(cfg, tmp_path / "run", progress=False)
    assert [m["step"] for m in metrics] == [1, 2, 3, 4, 5]
    assert metrics[-1]["lr"] == pytest.approx(0.1 * cfg.optim.lr)
    assert metrics[-1]["epoch"] == 1  # the second pass began: 36 rows taken of 24
    assert (tmp_path / "run" / "checkpoints" / "step-5").is_dir()


def test_sft_rows_longer_than_max_len_are_dropped_not_cut(tmp_path, tiny, capsys):
    from tempering.trainer.data import load_examples

    path = tmp_path / "sft.jsonl"
    short = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
    long = [{"role": "user", "content": "count: " + " ".join(map(str, range(200)))}, {"role": "assistant", "content": "200"}]
    write_jsonl([{"messages": short}, {"messages": long}, {"messages": short}], path)
    full = load_examples(path, tiny.tokenizer, 4096)
    assert len(full) == 3
    limit = len(full[0].ids)
    kept = load_examples(path, tiny.tokenizer, limit)
    assert kept == [full[0], full[2]]  # whole, with their replies; the long one gone, not cut
    assert f"1 of 3 sft rows are longer than data.max_len ({limit}" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="every sft row .* is longer than data.max_len"):
        load_examples(path, tiny.tokenizer, limit - 1)


def test_bad_data_files_get_one_clear_error(tmp_path, tiny):
    from tempering.trainer.data import load_examples

    bad = tmp_path / "bad.jsonl"
    good = '{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]}\n'
    bad.write_text(good + "not json\n")  # rows stream in order: the first error met is the one told
    with pytest.raises(ConfigError, match="bad.jsonl:2 is not valid JSON"):
        load_examples(bad, tiny.tokenizer, 64)
    bad.write_text('{"messages": [{"role": "user", "content": "hi"}]}\n')
    with pytest.raises(ConfigError, match="no assistant message"):
        load_examples(bad, tiny.tokenizer, 64)
    bad.write_text('{"prompt": "hi", "chosen": "a"}\n')
    with pytest.raises(ConfigError, match="'rejected' is missing"):
        load_pairs(bad, tiny.tokenizer, 64)


def _run_cli_and_kill_after(run_dir, args, checkpoint: str, timeout: float = 240) -> None:
    """Start `temper train ...`, kill -9 it as soon as `checkpoint` exists."""
    proc = subprocess.Popen([sys.executable, "-m", "tempering.cli.main", "train", *args],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + timeout
    target = run_dir / "checkpoints" / checkpoint
    try:
        while not target.is_dir():
            if proc.poll() is not None:
                raise AssertionError(f"train exited ({proc.returncode}) before {checkpoint}: {proc.stderr.read()[-2000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {checkpoint} after {timeout} s")
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@pytest.mark.parametrize("algorithm", ["grpo", "sft", "dpo", "sft-streaming"])
def test_kill_9_then_resume_is_bitwise_identical(tmp_path, algorithm, sft_file, pairs_file):
    """4 steps in one go == 2 steps, kill -9, --resume to 4: identical weights and metrics.
    sft-streaming: the resume re-reads the stream to example 14 of 24 (steps of 7 through a
    buffer of 5), and step 4 crosses into the second epoch's freshly seeded pass."""
    if algorithm == "grpo":
        sets = {"algorithm.beta": 0.04}  # the reference model and KL term too
    elif algorithm == "sft-streaming":
        sets = {"algorithm.name": "sft", "algorithm.beta": 0, "data.batch_size": 7, "data.max_len": 128,
                "optim.lr": 1e-3, "data.path": str(sft_file), "data.streaming": "true", "data.shuffle_buffer": 5}
    else:
        sets = {"algorithm.name": algorithm, "algorithm.beta": 0, "data.batch_size": 4, "data.max_len": 128,
                "optim.lr": 1e-3, "data.path": str(sft_file if algorithm == "sft" else pairs_file)}
    cfg = load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in sets.items()])
    straight, killed = tmp_path / "straight", tmp_path / "killed"
    prepare_run(cfg, straight)
    a = train(cfg, straight, steps=4, progress=False)
    overrides = [x for k, v in sets.items() for x in ("--set", f"{k}={v}")]
    _run_cli_and_kill_after(killed, ["configs/tiny-cpu.yaml", "--run-dir", str(killed), "--steps", "4", *overrides],
                            "step-2")
    b = train(load_config(killed / "config.yaml"), killed, steps=4, resume=True, progress=False)
    lines = [json.loads(x) for x in (killed / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in lines] == [1, 2, 3, 4]
    strip = lambda ms: [{k: v for k, v in m.items() if k not in TIMING and not k.startswith("cost/")}  # noqa: E731
                        for m in ms]  # time and CPU time (cost/) depend on the machine
    assert strip(lines) == strip(a)
    assert b and b[-1]["step"] == 4
    wa = AutoModelForCausalLM.from_pretrained(straight / "checkpoints" / "step-4").state_dict()
    wb = AutoModelForCausalLM.from_pretrained(killed / "checkpoints" / "step-4").state_dict()
    assert all(torch.equal(wa[k], wb[k]) for k in wa)


def test_reward_model_mixes_into_rl_and_retrains_on_fresh_pairs(tmp_path, pairs_file, parity_env):
    rm_cfg = _cfg("reward_model", pairs_file)
    prepare_run(rm_cfg, tmp_path / "rm")
    train(rm_cfg, tmp_path / "rm", steps=2, progress=False)
    rm_dir = tmp_path / "rm" / "checkpoints" / "step-2"
    sets = {"reward.model": str(rm_dir), "reward.model_weight": 0.5, "reward.model_update_every": 1,
            "algorithm.drop_zero_variance": "false", "rollout.group_size": 4}
    cfg = load_config("configs/tiny-cpu.yaml", [f"{k}={v}" for k, v in sets.items()])
    prepare_run(cfg, tmp_path / "rl")
    metrics = train(cfg, tmp_path / "rl", steps=2, progress=False, env=parity_env)
    # the verifier alone pays 0 or 1; mixed with a model score, rewards leave {0, 1}
    assert any(m["reward_mean"] not in (0.0, 0.5, 1.0) for m in metrics)
    assert any(m.get("rm_pairs", 0) > 0 and "rm_loss" in m for m in metrics)
    assert (tmp_path / "rl" / "checkpoints" / "step-2" / "reward_model" / "model.safetensors").is_file()
    # and the cheap reward-model audit ran each update step, on what the model scored
    for m in metrics:
        assert -1.0 <= m["rm_audit/length_r"] <= 1.0 and m["rm_audit/pairs"] >= 0
        assert "rm_audit/agreement" not in m or 0.0 <= m["rm_audit/agreement"] <= 1.0


def test_lora_trains_adapters_only_and_resumes(tmp_path, sft_file):
    cfg = _cfg("sft", sft_file, **{"lora.rank": 4, "lora.alpha": 8})
    prepare_run(cfg, tmp_path)
    train(cfg, tmp_path, steps=1, progress=False)
    ckpt = tmp_path / "checkpoints" / "step-1"
    assert (ckpt / "adapter_config.json").is_file() and (ckpt / "adapter_model.safetensors").is_file()
    adapter = load_file(ckpt / "adapter_model.safetensors")
    assert adapter and all("lora_" in k for k in adapter)
    metrics = train(cfg, tmp_path, steps=2, resume=True, progress=False)
    assert [m["step"] for m in metrics] == [2]


def test_gradient_checkpointing_gives_the_same_update(tmp_path, sft_file):
    states = []
    for on in ("false", "true"):
        cfg = _cfg("sft", sft_file, **{"train.gradient_checkpointing": on, "data.shuffle": "false"})
        prepare_run(cfg, tmp_path / on)
        train(cfg, tmp_path / on, steps=1, progress=False)
        states.append(load_file(tmp_path / on / "checkpoints" / "step-1" / "model.safetensors"))
    assert all(torch.allclose(states[0][k], states[1][k], atol=1e-6) for k in states[0])
