"""scheduler.backend: ray returns what the local backend returns for the same seeds, on a
local Ray instance with 2 CPUs (two rollout and two sandbox actors of half a CPU each)."""

from __future__ import annotations

import dataclasses
import importlib.util
import pickle
import time
from pathlib import Path

import pytest
import torch

ray = pytest.importorskip("ray")

from tempering import envs  # noqa: E402
from tempering.config import load_config  # noqa: E402
from tempering.errors import ConfigError  # noqa: E402
from tempering.rollout import Budget, HFClient, chat_prompt_ids  # noqa: E402
from tempering.rollout.engine import row_seeds  # noqa: E402
from tempering.scheduler.backends import LocalRollout  # noqa: E402
from tempering.sandbox import audit, seccomp  # noqa: E402
from tempering.scheduler.ray_backend import (RayRollout, RolloutWorker, SandboxWorker, WeightTracker,  # noqa: E402
                                             _check_address)
from tempering.scheduler.store import STORE_FILE, Store  # noqa: E402
from tempering.trainer import prepare_run, train  # noqa: E402
from tempering.types import SamplingParams  # noqa: E402

TINY = Path(__file__).parents[2] / "configs" / "tiny-cpu.yaml"
MIX = ["env.id=mix", "env.mix={math/arith-v1: 1.0, code/repair-v1: 1.0}"]
"""Single-turn arithmetic and multi-turn code repair: one set of actors serves both tests
(starting actors, each importing torch, dominates the time on 2 cores)."""
TIMING = ("time_", "tokens_per_s", "episodes_reused", "cost/")


@pytest.fixture(scope="module")
def local_ray():
    """A local Ray instance with 2 CPUs. The driver runs torch on one thread, as Ray runs a
    0.5-CPU actor (OMP_NUM_THREADS=1): like for like, and two spinning OpenMP threads on a
    busy 2-core machine made the tiny model's sampling 30x slower (14 s vs 0.5 s)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()
    torch.set_num_threads(threads)


def _same_completions(got, want):
    assert [(c.token_ids, c.text, c.finish_reason, c.prompt_ids) for c in got] == \
           [(c.token_ids, c.text, c.finish_reason, c.prompt_ids) for c in want]
    for g, w in zip(got, want):
        assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-5, rtol=0)


@pytest.fixture(scope="class")
def backends(local_ray, tiny):
    """(LocalRollout, RayRollout) over the same mixed env and weights: 2 rollout and 2
    sandbox actors, all of the 2 CPUs, so they go before anything else starts actors."""
    cfg = load_config(TINY, MIX)
    remote = RayRollout(cfg, tiny.model)
    yield LocalRollout(HFClient(tiny.model, tiny.tokenizer, max_batch=8), envs.make_from_config(cfg.env)), remote
    remote.close()


class TestSameAsLocal:
    """The backend's calls, one by one, against LocalRollout on the same seeds."""

    def test_sample_and_verify_match_local(self, backends, tiny):
        local, remote = backends
        tasks = [local.env.task("train", i, "math/arith-v1") for i in range(5)]  # over 2 workers: uneven shards
        prompts = [chat_prompt_ids(tiny.tokenizer, t.prompt) for t in tasks]
        params = SamplingParams(temperature=1.0, max_new_tokens=16, n=4, seed=7)
        seeds = [row_seeds(7, i, 4) for i in range(len(tasks))]
        want = local.sample(prompts, params, seeds)
        _same_completions(remote.sample(prompts, params, seeds), want)
        # the random model never answers right: score the gold answers too, so some pass
        answered = [t for t in tasks for _ in range(4)] + tasks
        texts = [c.text for c in want] + [local.env.reference_response(t) for t in tasks]
        scores = [s for s, _ in remote.verify(answered, texts)]
        assert scores == [s for s, _ in local.verify(answered, texts)]
        assert sum(s.passed for s in scores) == len(tasks)
        for record in [tasks[0], want[0], scores[-1]]:  # what crosses to and from the actors
            assert pickle.loads(pickle.dumps(record)) == record

    def test_sync_brings_the_workers_up_to_date(self, backends, tiny):
        local, remote = backends
        prompts = [chat_prompt_ids(tiny.tokenizer, local.env.task("train", i, "math/arith-v1").prompt)
                   for i in range(2)]
        params = SamplingParams(temperature=1.0, max_new_tokens=8, n=2, seed=5)
        seeds = [row_seeds(5, i, 2) for i in range(2)]
        before = remote.sample(prompts, params, seeds)
        head = tiny.model.get_output_embeddings().weight
        saved = head.detach().clone()
        try:
            with torch.no_grad():
                head.mul_(3.0)  # sharper next-token distributions: other samples
            assert remote.sample(prompts, params, seeds) == before  # not synced yet
            remote.sync()
            after = remote.sample(prompts, params, seeds)
            _same_completions(after, local.sample(prompts, params, seeds))
            assert [c.token_ids for c in after] != [c.token_ids for c in before]
        finally:
            with torch.no_grad():
                head.copy_(saved)
            remote.sync()

    def test_play_matches_local_across_turns(self, backends, shared_sandbox):
        """code/repair-v1 in the sandbox: the tiny model writes garbage, so every episode gets
        feedback turns until the turn budget cuts it. Rounds and overlap pipelines alike."""
        local, remote = backends
        ids = [0, 1, 3, 4, 6]  # slots of 3 tasks x 2 attempts, as if 2 and 5 were stored already
        tasks = [local.env.task("train", i // 2, "code/repair-v1") for i in ids]
        params = SamplingParams(temperature=1.0, max_new_tokens=12, seed=3)
        whole = Budget(max_turns=3, max_new_tokens=36)
        # past the prompt and a little more, the repair env's compressed conversation takes over
        compressed = dataclasses.replace(whole, context_budget=max(len(local.client.tokenizer(t.prompt[-1].content)
                                                                       ["input_ids"]) for t in tasks) + 60)
        for budget, overlap in ((whole, False), (whole, True), (compressed, True)):
            want: dict = {}
            local.play(tasks, ids, params, budget, False, want.__setitem__)
            assert {len(t.turns) for t in want.values()} == {3}  # feedback was really exchanged
            assert any(t.segments for t in want.values()) == bool(budget.context_budget)
            assert pickle.loads(pickle.dumps(want[0])) == want[0]
            got: dict = {}
            assert set(remote.play(tasks, ids, params, budget, overlap, got.__setitem__)) == {"env_wait_s"}
            assert sorted(got) == ids
            for i in ids:
                g, w = got[i], want[i]
                assert (g.token_ids, g.loss_mask, g.stop_reason, g.messages) == \
                       (w.token_ids, w.loss_mask, w.stop_reason, w.messages)
                assert [(t.action, t.reward, t.feedback, t.span, t.segment) for t in g.turns] == \
                       [(t.action, t.reward, t.feedback, t.span, t.segment) for t in w.turns]
                assert [(s.prompt_ids, s.token_ids, s.loss_mask) for s in g.segments] == \
                       [(s.prompt_ids, s.token_ids, s.loss_mask) for s in w.segments]
                assert torch.allclose(torch.tensor(g.logprobs), torch.tensor(w.logprobs), atol=1e-5, rtol=0)


    def test_sandbox_incidents_come_back_with_their_tag(self, backends):
        """A reply whose program tries a denied call, verified in a sandbox worker: the
        incident lands in this process's audit log under the attempt's tag (sandbox/audit.py)."""
        if not seccomp.notify_supported():
            pytest.skip("no seccomp listener on this kernel: denied calls leave no entry")
        local, remote = backends
        task = local.env.task("train", 0, "code/repair-v1")
        remote.verify([task, task], [HOSTILE, local.env.reference_response(task)], tags=[901, 902])
        assert [(i.status, i.detail) for i in audit.LOG.take(901)] == [("denied_syscall", "ptrace")]
        assert audit.LOG.take(902) == [] and audit.LOG.by_tag == {}


HOSTILE = "```python\nimport ctypes\nctypes.CDLL(None).ptrace(0, 0, 0, 0)\n```"
"""A code reply whose program tries ptrace (refused with EPERM, and noted by the fork server)."""


def test_an_episodes_incidents_come_back_when_it_closes(shared_sandbox):
    """The sandbox worker's side of play: an episode's runs are noted under its key and
    handed back by close (RayRollout.play puts them into the trainer's audit log)."""
    if not seccomp.notify_supported():
        pytest.skip("no seccomp listener on this kernel: denied calls leave no entry")
    cfg = load_config(TINY, MIX)
    worker = SandboxWorker(cfg.env, env_workers=1, max_turns=3)
    task = envs.make_from_config(cfg.env).task("train", 0, "code/repair-v1")
    worker.reset(7, task)
    worker.step(7, HOSTILE)
    assert [(i.status, i.detail) for i in worker.close(7)] == [("denied_syscall", "ptrace")]
    assert worker.close(7) == []


def _same_episodes(got, want):
    """Equal but for timings; float sequences (log-probs) within 1e-5."""
    assert len(got) == len(want)
    for g, w in zip(got, want):
        for f in dataclasses.fields(g):
            a, b = getattr(g, f.name), getattr(w, f.name)
            if f.name in ("env_s", "wall_s"):
                continue
            if isinstance(a, tuple) and any(isinstance(x, float) for x in a):
                assert torch.allclose(torch.tensor(a), torch.tensor(b), atol=1e-5, rtol=0), f.name
            else:
                assert a == b, f.name


def test_training_on_ray_matches_local(local_ray, tmp_path):
    """Two steps of configs/tiny-cpu.yaml: step 2 samples from weights synced after step 1.
    The random model never scores, so GRPO's gradient is zero there; an entropy bonus and a
    large rate make step 1 really move the weights. One rollout worker: sharding is checked
    above, and each actor costs seconds to start."""
    runs = {}
    for backend in ("local", "ray"):
        cfg = load_config(TINY, [f"scheduler.backend={backend}", "scheduler.rollout_workers=1",
                                 "algorithm.entropy_coef=0.01", "optim.lr=0.01"])
        prepare_run(cfg, tmp_path / backend)
        metrics = train(cfg, tmp_path / backend, steps=2, progress=False)
        store = Store(tmp_path / backend / STORE_FILE)
        runs[backend] = ([{k: v for k, v in m.items() if not k.startswith(TIMING)} for m in metrics],
                         store.episodes())
        store.close()
    assert runs["ray"][0][0]["grad_norm"] > 0
    assert runs["ray"][0] == runs["local"][0]
    _same_episodes(runs["ray"][1], runs["local"][1])
    assert len(runs["ray"][1]) == 2 * 2 * 4  # steps x prompts x group


def test_a_lora_copy_takes_the_trainers_weights(tiny):
    """A rollout worker wraps its copy in the trainer's own adapter config, so the trainer's
    state dict loads key for key; after an update only the adapters are sent."""
    from tempering.trainer.run import _load_model

    cfg = load_config(TINY, ["lora.rank=4"])
    policy = _load_model(cfg, None).model
    tracker = WeightTracker()
    first = tracker.changed(policy)
    assert first.keys() == policy.state_dict().keys() and not tracker.changed(policy)
    opt = torch.optim.AdamW([p for p in policy.parameters() if p.requires_grad], lr=0.1)
    policy(input_ids=torch.tensor([[1, 2, 3]])).logits.sum().backward()
    opt.step()
    sent = tracker.changed(policy)
    assert sent and all("lora_" in k for k in sent)
    worker = RolloutWorker(cfg.model.name, cfg.model.dtype, policy.peft_config["default"], 8, 1)
    worker.load_weights(first | sent)
    mine = worker.client.model.state_dict()
    assert mine.keys() == policy.state_dict().keys()
    assert all(torch.equal(mine[k], v) for k, v in policy.state_dict().items())


def test_more_workers_than_the_cluster_holds_is_a_config_error(local_ray):
    cfg = load_config(TINY, ["scheduler.backend=ray", "scheduler.rollout_workers=8"])
    with pytest.raises(ConfigError, match="scheduler.rollout_workers=8 .* need 5 CPUs"):
        RayRollout(cfg, None)  # refused before any actor starts: Ray would leave them pending forever


@pytest.mark.parametrize("address", ["127.0.0.1:1", "ray://127.0.0.1:1"])
def test_an_unreachable_address_is_one_config_error_in_seconds(address):
    t = time.monotonic()
    with pytest.raises(ConfigError, match="scheduler.address"):
        _check_address(address)
    assert time.monotonic() - t < 120  # a harness bound: Ray's own retries would go on for minutes


@pytest.mark.slow  # a vLLM engine in a Ray actor and one in the driver: ~2-5 min on 2 cores (make test-slow)
@pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vLLM is not installed (make setup installs it)")
def test_a_ray_worker_samples_with_its_own_vllm_engine_synced_and_checked(local_ray, tmp_path):
    """rollout.engine vllm on Ray: the worker builds its own engine, each update reaches it
    through the worker's copy and is checked there, and the run equals the local vLLM run."""
    runs = {}
    for backend in ("local", "ray"):
        cfg = load_config(TINY, [f"scheduler.backend={backend}", "scheduler.rollout_workers=1", "rollout.engine=vllm",
                                 "rollout.engine_kv_gib=0.25", "algorithm.entropy_coef=0.01", "optim.lr=0.01",
                                 "log.report=false"])
        prepare_run(cfg, tmp_path / backend)
        metrics = train(cfg, tmp_path / backend, steps=2, progress=False)
        store = Store(tmp_path / backend / STORE_FILE)
        runs[backend] = (metrics, store.episodes())
        store.close()
    ray_metrics = runs["ray"][0]
    assert ray_metrics[0]["grad_norm"] > 0
    for m in ray_metrics:
        assert m["rollout/sync_ok"] == 1.0 and m["rollout/sync_tensors_checked"] > 0
        assert m["rollout/sync_tensors_unequal"] == 0 and m["rollout/probe_diff_max"] < 2e-3
    _same_episodes(runs["ray"][1], runs["local"][1])  # the same tokens, sampled in another process
