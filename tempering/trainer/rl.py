"""The RL step for the GRPO family and PPO, readable as the algorithm.

    generate  sample G attempts at each of P prompts, or play G multi-turn episodes per task
    score     the env's verifier on each attempt, optionally mixed with a reward model's
              score; DAPO's dynamic sampling drops groups whose rewards are all equal; an
              attempt whose sandbox failed on every try is left out of its group (envs/infra.py)
              (generate and score: trainer/collect.py; one step off-policy, in the
              background while the last step trains: trainer/offpolicy.py)
    advantage by the recipe's estimator (config.RECIPES): grpo, dr_grpo, rloo, reinforce_pp
              over each group's rewards, or GAE over a learned critic's values (ppo); DAPO's
              soft length penalty and a KL penalty in the reward apply first (trainer/batch.py)
    update    the clipped policy loss (clip-higher, one of three aggregations, KL in the
              loss, entropy bonus), one optimiser step per epoch; the critic too for ppo.
              A group whose advantages are all 0 is not run when nothing else is in the
              loss: its tokens still count in the normaliser, and the weights come out the same.
              Only tokens the model generated carry loss: in a multi-turn episode the env's
              feedback and the chat template's tokens sit in the sequence but are masked.
              When vLLM sampled, each token's loss is weighted by min(pi_trainer / pi_sampler,
              rollout.tis_cap) (trainer/mismatch.py), and the gap is logged.
    sync      rollout copies of the policy (vLLM, ray workers) take the new weights, and a
              check proves they did (rollout/sync_ok; the sync alert stops the run)

Every algorithm is the same loop with a different row in config.RECIPES: dapo is GRPO's
estimator with token_mean, clip-higher, dynamic sampling and overlong filtering and penalty;
grpo averages per sequence first; dr_grpo divides by a constant length instead.
"""

from __future__ import annotations

import time

import torch

from tempering.algorithms.kl import AdaptiveKL
from tempering.algorithms.losses import policy_loss
from tempering.config import Config
from tempering.envs import SingleTurnEnv
from tempering.trainer.batch import BatchAdvantages, PreparedBatch, batch_advantages, loss_mask, prepare_batch
from tempering.trainer.collect import Collected, Collector
from tempering.trainer.group import Group
from tempering.trainer.logprobs import group_logprobs
from tempering.trainer.mismatch import SamplerMismatch
from tempering.trainer.offpolicy import SampleAhead, frozen_copy

__all__ = ["Group", "RLStep"]


class RLStep:
    """Holds what persists between steps (task sampler, KL coefficient, critic)
    and runs one step."""

    def __init__(self, config: Config, env: SingleTurnEnv, policy, tokenizer, optimizer, scheduler, reference=None,
                 critic=None, reward_model=None):
        self.cfg = config
        self.policy = policy
        self.tokenizer = tokenizer
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.reference = reference
        self.critic = critic
        """A `Critic` when the recipe's estimator is GAE (ppo), else None."""
        self.reward_model = reward_model
        """A `RewardModelScorer` when reward.model is set, else None."""
        self.kl_ctl = AdaptiveKL(config.algorithm.beta, config.algorithm.kl_target, config.algorithm.kl_horizon)
        rollout_model = frozen_copy(policy) if config.rollout.max_staleness else policy
        self.collector = Collector(config, env, rollout_model, tokenizer, reward_model)
        """Generate + score: the rollout backend, the task sampler and the store."""
        self.ahead = (SampleAhead(self.collector.collect, policy, rollout_model, self.collector.sampler)
                      if config.rollout.max_staleness else None)
        """One step off-policy: samples the next batch while this one trains; None on-policy."""
        self.updates = 0
        """Optimiser updates so far (the policy's version)."""
        self.final_step: int | None = None
        """Last step of this session (set by the run loop), so no batch is sampled past it."""

    @property
    def store(self):
        """Where finished attempts go (set by the run loop); None keeps nothing."""
        return self.collector.store

    @store.setter
    def store(self, store) -> None:
        self.collector.store = store

    # -- state for exact resume -------------------------------------------------------------
    def state_dict(self) -> dict:
        # A batch being sampled ahead has already advanced the sampler: save it as it was
        # before, so a resumed run draws (and finds in the store) the same tasks.
        before = self.ahead.sampler_state if self.ahead is not None else None
        sampler = before if before is not None else self.collector.sampler.state_dict()
        state = {"sampler": sampler, "kl": self.kl_ctl.state_dict(), "updates": self.updates}
        if self.reward_model is not None:
            state["reward_model"] = self.reward_model.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.collector.sampler.load_state_dict(state["sampler"])
        self.updates = state.get("updates", 0)
        self.kl_ctl.load_state_dict(state["kl"])
        if self.reward_model is not None:
            self.reward_model.load_state_dict(state["reward_model"])

    # -- the step -----------------------------------------------------------------------------
    def step(self, step: int) -> dict:
        t0 = time.perf_counter()
        if self.ahead is not None:  # sampled while the last step trained
            got = self.ahead.take(step, self.updates, self.final_step)
        else:
            got = self.collect(step)                                       # generate + score (+ filter)
        timing = dict(got.timing)
        t_update = time.perf_counter()
        update = self.update(got.batch) if got.batch else {"skipped_update": 1}  # advantage + update + sync
        if self.reward_model is not None:                                  # keep the reward model current
            update |= self.reward_model.maybe_update(step)
            update |= self.reward_model.maybe_audit(step)                  # and check it still agrees
        timing["time_update"] = time.perf_counter() - t_update
        timing["time_step"] = time.perf_counter() - t0
        return {"step": step, **self.collector.metrics(got), **update, **timing}

    def collect(self, step: int, version: int | None = None) -> Collected:
        """Sample and score the groups of `step` (see trainer/collect.py): (batch, sampled, timing)."""
        return self.collector.collect(step, self.updates if version is None else version)

    def update(self, batch: list[Group]) -> dict:
        """Advantages for the batch, then one optimiser step per epoch, then the new weights
        go to the rollout copies. Gradients accumulate unit by unit, normalised by
        batch-wide counts so the split does not matter."""
        temperature, pad = self.cfg.rollout.temperature, self.tokenizer.pad_token_id or 0
        prep = prepare_batch(self.cfg, batch, self._mask, lambda model, g: self._logprobs(model, g, temperature, pad).logp,
                             self.policy, self.reference, self.kl_ctl.beta, self.policy.device,
                             sampled_elsewhere=self.collector.rollout.engine != "hf")
        adv = batch_advantages(self.cfg, prep, self.critic)
        self._record_advantages(prep, adv)
        metrics = self._optimise(prep, adv)
        self.scheduler.step()
        self.updates += 1
        staleness = sum(self.updates - 1 - g.version for g in batch) / len(batch)
        sync = {}
        if self.ahead is None:  # rollout copies of the policy (vllm, ray workers) take the new weights, checked
            sync = self.collector.rollout.sync() or {}
        self.policy.eval()
        self.kl_ctl.update(metrics["kl"])
        return metrics | sync | {"lr": self.scheduler.get_last_lr()[0], "staleness": staleness}

    def _record_advantages(self, prep: PreparedBatch, adv: BatchAdvantages) -> None:
        """Each trained attempt's reward and advantage go to the store, for the rollout viewer."""
        if self.store is None:
            return
        rows = []
        for g, a, m in zip(prep.groups, adv.per_unit, prep.masks):
            per_attempt = a if a.dim() == 1 else (a * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
            rows += [(key, float(r), float(v)) for key, r, v in zip(g.keys, g.rewards, per_attempt.tolist())]
        self.store.add_advantages(self.updates + 1, rows)

    def _optimise(self, prep: PreparedBatch, adv: BatchAdvantages) -> dict:
        """algorithm.epochs optimiser steps of the clipped policy loss over every unit that
        can move the weights (and of the value loss, with a critic)."""
        a = self.cfg.algorithm
        temperature, pad = self.cfg.rollout.temperature, self.tokenizer.pad_token_id or 0
        kl_in_loss = prep.ref is not None and a.kl_in == "loss"
        idle = self._idle(adv.per_unit, prep.ref is not None)
        self.policy.train()
        sums = {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0}
        entropy = [0.0, 0.0]  # summed over the tokens that ran, and their count
        critic: dict = {}
        mismatch = SamplerMismatch(self.cfg.rollout.tis_cap) if prep.sampler is not None else None
        for epoch in range(a.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            for i, g in enumerate(prep.units):
                if idle[i]:
                    continue
                lp = self._logprobs(self.policy, g, temperature, pad, entropy_grad=a.entropy_coef > 0)
                before = lp.logp.detach() if prep.base is None else prep.base[i]
                weights = None
                if mismatch is not None:  # another engine sampled: weigh by pi_trainer / pi_sampler (TIS)
                    weights = mismatch.weights(before, prep.sampler[i], prep.masks[i], record=epoch == 0)
                out = policy_loss(lp.logp, before, adv.per_unit[i], prep.masks[i], clip_low=a.clip_eps,
                                  clip_high=a.clip_eps_high, agg=a.loss_agg, norm=prep.norm,
                                  ref_logp=prep.ref[i] if kl_in_loss else None, beta=prep.beta,
                                  kl_estimator=a.kl_estimator, entropy=lp.entropy, entropy_coef=a.entropy_coef,
                                  is_weights=weights)
                out.loss.backward()
                for k in sums:
                    sums[k] += getattr(out, k).item()
                entropy[0] += float((lp.entropy.detach() * prep.masks[i]).sum())
                entropy[1] += float(prep.masks[i].sum())
            if all(idle):  # nothing ran: step on zero gradients, as running the groups would have
                for p in self.policy.parameters():
                    if p.requires_grad and p.grad is None:
                        p.grad = torch.zeros_like(p)
            grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.optim.grad_clip)
            self.optimizer.step()
            if self.critic is not None:
                critic = self.critic.update(prep.groups, adv.returns, adv.values, prep.masks)
        kl = sums["kl"] / a.epochs if a.kl_in == "loss" else (adv.kl_reward or 0.0)
        metrics = {k: v / a.epochs for k, v in sums.items()} | {"kl": kl, "beta": prep.beta, "groups_idle": sum(idle),
                                                                "entropy": entropy[0] / max(entropy[1], 1.0)}
        return (metrics | adv.metrics() | critic | {"grad_norm": float(grad_norm)}
                | (mismatch.metrics() if mismatch is not None else {}))

    def summary(self, m: dict) -> str:
        return (f"reward {m['reward_mean']:.3f} pass {m['pass_rate']:.2f} len {m['response_len']:.0f} "
                f"{m['time_step']:.1f}s/step")

    def close(self) -> None:
        """Let a batch being sampled ahead finish (its episodes land in the store, where a
        resumed run finds them), then release the rollout backend's workers."""
        if self.ahead is not None:
            self.ahead.close()
        self.collector.rollout.close()

    def save_extra(self, directory) -> None:
        """Checkpoint what lives beside the policy: the critic (ppo) and a reward model that trains."""
        if self.critic is not None:
            self.critic.save(directory / "critic")
        if self.reward_model is not None and self.cfg.reward.model_update_every > 0:
            self.reward_model.save(directory / "reward_model")

    def _mask(self, g: Group) -> torch.Tensor:
        """(G, C) loss mask: generated tokens, minus truncated attempts under overlong filtering."""
        return loss_mask(g, self.cfg.algorithm.overlong_filter)

    def _idle(self, advantages: list[torch.Tensor], use_ref: bool) -> list[bool]:
        """Units that cannot move the weights: all advantages exactly 0 (every attempt scored
        the same) and nothing else in the loss (no KL term, no entropy bonus). Their tokens stay
        in the normaliser, so skipping their forward and backward passes changes nothing."""
        a = self.cfg.algorithm
        bare = a.entropy_coef == 0 and not (use_ref and a.kl_in == "loss")
        return [bare and not bool(adv.any()) for adv in advantages]

    def _logprobs(self, model, group: Group, temperature: float, pad: int, entropy_grad: bool = False):
        return group_logprobs(model, group.prompt_ids, group.sequences, temperature, pad, entropy_grad=entropy_grad)
