"""GRPO: the policy-optimisation step, readable as the algorithm.

    generate  sample G completions for each of P prompts (shared prompt KV cache)
    score     run the env's verifier on each completion
    filter    keep groups whose rewards differ (dynamic sampling): the rest have no gradient;
              sample more rounds until `min_informative_groups` are buffered
    advantage group-normalised rewards (GRPO) or centred only (Dr. GRPO)
    update    PPO-clipped ratio loss, token-level mean over the whole batch, optional k3 KL
              to the frozen reference; one optimiser step per batch by default

What it keeps from GRPO (arXiv:2402.03300): group baselines, clipped ratio, KL in the loss.
What it changes: token-level normalisation and zero-variance filtering from DAPO
(arXiv:2503.14476); the KL term is off by default (beta = 0), as in DAPO and Dr. GRPO.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

import torch

from tempering.algorithms import POLICY_LOSSES, grpo_advantages
from tempering.config import Config
from tempering.envs import SingleTurnEnv
from tempering.rollout import HFClient
from tempering.scheduler import FamilyCurriculum
from tempering.trainer.logprobs import group_logprobs
from tempering.types import Completion, SamplingParams, Task


@dataclass
class Group:
    """One prompt and its G scored completions."""

    task: Task
    family: str | None
    completions: list[Completion]
    rewards: list[float]
    passed: list[bool]

    @property
    def informative(self) -> bool:
        return max(self.rewards) - min(self.rewards) > 1e-8


class GRPOStep:
    """Holds what persists between steps (data cursor, curriculum) and runs one step."""

    def __init__(self, config: Config, env: SingleTurnEnv, policy, tokenizer, optimizer, scheduler, reference=None):
        self.cfg = config
        self.env = env
        self.policy = policy
        self.tokenizer = tokenizer
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.reference = reference
        self.client = HFClient(policy, tokenizer, max_batch=config.rollout.prompts_per_step * config.rollout.group_size)
        self.curriculum = FamilyCurriculum(env.families if config.train.curriculum else ())
        self.cursor = 0  # index of the next training task: the data-loader position

    # -- state for exact resume -------------------------------------------------------------
    def state_dict(self) -> dict:
        return {"cursor": self.cursor, "curriculum": self.curriculum.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.cursor = state["cursor"]
        self.curriculum.load_state_dict(state["curriculum"])

    # -- the step -----------------------------------------------------------------------------
    def step(self, step: int) -> dict:
        t0 = time.perf_counter()
        batch, sampled, timing = self.collect(step)                       # generate + score + filter
        t_update = time.perf_counter()
        update = self.update(batch) if batch else {"skipped_update": 1}   # advantage + update
        timing["time_update"] = time.perf_counter() - t_update
        timing["time_step"] = time.perf_counter() - t0
        return {"step": step, **self._rollout_metrics(sampled, batch, timing), **update, **timing}

    def collect(self, step: int) -> tuple[list[Group], list[Group], dict]:
        """Sample rounds of groups until enough are informative (DAPO's dynamic sampling).

        Returns (groups to train on, every group sampled, timings).
        """
        r = self.cfg.rollout
        params_base = dict(temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens, n=r.group_size)
        informative, sampled, t_gen, t_score, tokens = [], [], 0.0, 0.0, 0
        for rnd in range(r.max_rounds_per_step):
            rng = random.Random(f"{self.cfg.seed}|{step}|{rnd}")
            families = self.curriculum.sample(rng, r.prompts_per_step)
            tasks = [self.env.task(self.cfg.env.split, self.cursor + i, fam) for i, fam in enumerate(families)]
            self.cursor += len(tasks)
            t = time.perf_counter()
            seed = rng.randrange(2**62)
            completions = self.client.generate([task.prompt for task in tasks], SamplingParams(**params_base, seed=seed))
            t_gen += time.perf_counter() - t
            tokens += sum(len(c.token_ids) for c in completions)
            t = time.perf_counter()
            for i, (task, fam) in enumerate(zip(tasks, families)):
                comps = completions[i * r.group_size : (i + 1) * r.group_size]
                scores = [self.env.verify(task, c.text) for c in comps]
                group = Group(task, fam, comps, [s.value for s in scores], [s.passed for s in scores])
                self.curriculum.update(fam, group.informative)
                sampled.append(group)
                if group.informative:
                    informative.append(group)
            t_score += time.perf_counter() - t
            if len(informative) >= r.min_informative_groups or not self.cfg.algorithm.drop_zero_variance:
                break
        timing = {"time_generate": t_gen, "time_score": t_score, "tokens_per_s": tokens / max(t_gen, 1e-9), "rounds": rnd + 1}
        return (informative if self.cfg.algorithm.drop_zero_variance else sampled), sampled, timing

    def update(self, batch: list[Group]) -> dict:
        """One optimiser step per epoch over the batch; gradients accumulate group by group."""
        a = self.cfg.algorithm
        temperature = self.cfg.rollout.temperature
        pad = self.tokenizer.pad_token_id or 0
        rewards = torch.tensor([g.rewards for g in batch], dtype=torch.float32)  # (N, G)
        advantages = grpo_advantages(rewards, scale=a.scale_rewards)             # (N, G)
        denom = float(sum(len(c.token_ids) for g in batch for c in g.completions))
        loss_fn = POLICY_LOSSES[a.name]
        old = None
        if a.epochs > 1:  # later epochs need the log-probs from before the first update
            with torch.no_grad():
                old = [self._logprobs(self.policy, g, temperature, pad).logp for g in batch]
        self.policy.train()
        sums = {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "entropy": 0.0}
        for _ in range(a.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            for i, g in enumerate(batch):
                lp = self._logprobs(self.policy, g, temperature, pad)
                ref = None
                if self.reference is not None and a.beta > 0:
                    with torch.no_grad():
                        ref = self._logprobs(self.reference, g, temperature, pad).logp
                out = loss_fn(lp.logp, lp.logp.detach() if old is None else old[i], advantages[i], lp.mask,
                              clip_eps=a.clip_eps, ref_logp=ref, beta=a.beta, kl_estimator=a.kl_estimator, denom=denom)
                out.loss.backward()
                sums["loss"] += out.loss.item()
                sums["kl"] += out.kl.item()
                sums["clip_frac"] += out.clip_frac.item()
                sums["entropy"] += ((lp.entropy * lp.mask).sum() / denom).item()
            grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.optim.grad_clip)
            self.optimizer.step()
        self.scheduler.step()
        self.policy.eval()
        return {k: v / a.epochs for k, v in sums.items()} | {"grad_norm": float(grad_norm), "lr": self.scheduler.get_last_lr()[0]}

    def _logprobs(self, model, group: Group, temperature: float, pad: int):
        return group_logprobs(model, group.completions[0].prompt_ids, [c.token_ids for c in group.completions], temperature, pad)

    def _rollout_metrics(self, sampled: list[Group], batch: list[Group], timing: dict) -> dict:
        rewards = torch.tensor([r for g in sampled for r in g.rewards])
        lengths = [len(c.token_ids) for g in sampled for c in g.completions]
        passed = [p for g in sampled for p in g.passed]
        return {
            "reward_mean": rewards.mean().item(), "reward_std": rewards.std().item() if len(rewards) > 1 else 0.0,
            "pass_rate": sum(passed) / len(passed), "response_len": sum(lengths) / len(lengths),
            "groups_sampled": len(sampled), "groups_informative": sum(g.informative for g in sampled),
            "groups_trained": len(batch),
        }
