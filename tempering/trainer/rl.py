"""The RL step for the GRPO family and PPO, readable as the algorithm.

    generate  sample G completions for each of P prompts (shared prompt KV cache), or, with
              rollout.max_turns > 1, play G multi-turn episodes per task (run_episodes)
    score     the env's verifier on each attempt (an episode's return when multi-turn),
              optionally mixed with a reward model's score
    filter    dynamic sampling (DAPO): drop groups whose rewards are all equal, and sample
              more rounds until `min_informative_groups` are buffered
    advantage by name: grpo, dr_grpo, rloo, reinforce_pp over each group's rewards, or GAE
              over a learned critic's values (ppo); DAPO's soft length penalty and a KL
              penalty in the reward apply first when configured
    update    the clipped policy loss (clip-higher, one of three aggregations, KL in the
              loss, entropy bonus), one optimiser step per epoch; the critic too for ppo.
              A group whose advantages are all 0 is not run when nothing else is in the
              loss: its tokens still count in the normaliser, and the weights come out the same.
              Only tokens the model generated carry loss: in a multi-turn episode the env's
              feedback and the chat template's tokens sit in the sequence but are masked.

Every algorithm is the same loop with different settings (see config.ALGORITHM_DEFAULTS):
dapo is token_mean + clip-higher + dynamic sampling + overlong filtering and penalty;
grpo averages per sequence first; dr_grpo divides by a constant length instead.
"""

from __future__ import annotations

import copy
import json
import random
import threading
import time
from concurrent.futures import Future

import torch

from tempering.algorithms import ADVANTAGES, KL_ESTIMATORS
from tempering.algorithms.advantages import gae
from tempering.algorithms.kl import AdaptiveKL
from tempering.algorithms.losses import Norm, overlong_penalty, policy_loss
from tempering.config import Config
from tempering.envs import SingleTurnEnv
from tempering.rollout import Budget, chat_prompt_ids
from tempering.rollout.engine import row_seeds
from tempering.scheduler.priorities import TaskSampler
from tempering.scheduler.backends import make_rollout
from tempering.scheduler.store import EpisodeRecord, Store
from tempering.trainer.group import Group, completion_record, trajectory_record
from tempering.trainer.logprobs import group_logprobs
from tempering.types import SamplingParams, Trajectory


class RLStep:
    """Holds what persists between steps (task sampler, KL coefficient, critic)
    and runs one step."""

    def __init__(self, config: Config, env: SingleTurnEnv, policy, tokenizer, optimizer, scheduler, reference=None,
                 critic=None, reward_model=None):
        self.cfg = config
        self.env = env
        self.policy = policy
        self.tokenizer = tokenizer
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.reference = reference
        self.critic = critic
        """A `Critic` for ppo, else None."""
        self.reward_model = reward_model
        """A `RewardModelScorer` when reward.model is set, else None."""
        self.kl_ctl = AdaptiveKL(config.algorithm.beta, config.algorithm.kl_target, config.algorithm.kl_horizon)
        self.rollout_model = copy.deepcopy(policy).eval() if config.rollout.max_staleness else policy
        """What samples: the policy itself, or (one step off-policy) a copy frozen per batch."""
        if config.rollout.max_staleness:
            self.rollout_model.requires_grad_(False)
        self.rollout = make_rollout(config, env, self.rollout_model, tokenizer)
        """Where sampling, verification and episodes run (scheduler.backend)."""
        self.multi_turn = config.rollout.max_turns > 1
        self.sampler = TaskSampler(env, config.env.split, config.train.curriculum, config.train.replay)
        """Which tasks each round draws: domain quotas, family curriculum, replay of mixed tasks."""
        self.updates = 0
        """Optimiser updates so far (the policy's version)."""
        self.final_step: int | None = None
        """Last step of this session (set by the run loop), so no batch is sampled past it."""
        self._ahead: tuple[int, Future] | None = None
        self._sampler_before: dict | None = None
        self.store: Store | None = None
        """Where finished attempts go (set by the run loop); None keeps nothing."""

    # -- state for exact resume -------------------------------------------------------------
    def state_dict(self) -> dict:
        # A batch being sampled ahead has already advanced the sampler: save it as it was
        # before, so a resumed run draws (and finds in the store) the same tasks.
        sampler = self._sampler_before if self._ahead is not None else self.sampler.state_dict()
        state = {"sampler": sampler, "kl": self.kl_ctl.state_dict(), "updates": self.updates}
        if self.reward_model is not None:
            state["reward_model"] = self.reward_model.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.sampler.load_state_dict(state["sampler"])
        self.updates = state.get("updates", 0)
        self.kl_ctl.load_state_dict(state["kl"])
        if self.reward_model is not None:
            self.reward_model.load_state_dict(state["reward_model"])

    # -- the step -----------------------------------------------------------------------------
    def step(self, step: int) -> dict:
        t0 = time.perf_counter()
        if self.cfg.rollout.max_staleness:
            batch, sampled, timing = self._collect_ahead(step)            # sampled while the last step trained
        else:
            batch, sampled, timing = self.collect(step)                   # generate + score + filter
        t_update = time.perf_counter()
        update = self.update(batch) if batch else {"skipped_update": 1}   # advantage + update
        if self.reward_model is not None:                                  # keep the reward model current
            update |= self.reward_model.maybe_update(step)
        timing["time_update"] = time.perf_counter() - t_update
        timing["time_step"] = time.perf_counter() - t0
        return {"step": step, **self._rollout_metrics(sampled, batch, timing), **update, **timing}

    # -- one step off-policy ----------------------------------------------------------------------
    def _collect_ahead(self, step: int) -> tuple[list[Group], list[Group], dict]:
        """Take the batch sampled in the background for `step` (by the weights before the
        previous update), then start sampling step + 1 from the current weights, so that
        generation runs while this step trains. Staleness is at most one update."""
        t = time.perf_counter()
        if self._ahead is None or self._ahead[0] != step:
            self._launch(step)
        batch, sampled, timing = self._ahead[1].result()
        self._ahead = None
        waited = time.perf_counter() - t
        if self.final_step is None or step < self.final_step:
            self._launch(step + 1)
        return batch, sampled, timing | {"time_wait_rollout": waited}

    def _launch(self, step: int) -> None:
        """Start collecting `step` in a daemon thread with a frozen copy of the current weights."""
        self.rollout_model.load_state_dict(self.policy.state_dict())
        self._sampler_before = json.loads(json.dumps(self.sampler.state_dict()))
        future: Future = Future()
        version = self.updates

        def work() -> None:
            try:
                future.set_result(self.collect(step, version))
            except BaseException as exc:  # noqa: BLE001 - re-raised in the trainer thread by result()
                future.set_exception(exc)

        threading.Thread(target=work, daemon=True, name=f"rollout-step-{step}").start()
        self._ahead = (step, future)

    def collect(self, step: int, version: int | None = None) -> tuple[list[Group], list[Group], dict]:
        """Sample rounds of groups until enough are informative (DAPO's dynamic sampling).

        Every attempt is written to the store as it finishes; attempts already there (from a
        run killed after sampling them) are read back instead of sampled again.
        Returns (groups to train on, every group sampled, timings).
        """
        r = self.cfg.rollout
        informative, sampled, t_gen, t_score, tokens, reused = [], [], 0.0, 0.0, 0, 0
        for rnd in range(r.max_rounds_per_step):
            rng = random.Random(f"{self.cfg.seed}|{step}|{rnd}")
            drawn = self.sampler.draw(rng, r.prompts_per_step)
            tasks, families = [t for t, _ in drawn], [f for _, f in drawn]
            seed = rng.randrange(2**62)
            stored = {e.slot: e for e in self.store.episodes(step, rnd)} if self.store is not None else {}
            reused += len(stored)
            t = time.perf_counter()
            records, t_env = (self._play if self.multi_turn else self._sample)(step, rnd, tasks, families, seed, stored)
            t_gen += time.perf_counter() - t - t_env
            t_score += t_env
            g = r.group_size
            groups = [Group.from_records(task, fam, records[i * g:(i + 1) * g])
                      for i, (task, fam) in enumerate(zip(tasks, families))]
            for group in groups:
                group.version = self.updates if version is None else version
            t = time.perf_counter()
            self._mix_rewards(groups)
            t_score += time.perf_counter() - t
            for group in groups:
                tokens += sum(sum(m) for m in group.masks)
                self.sampler.update(group.task, group.family, group.passed, group.informative)
                sampled.append(group)
                if group.informative:
                    informative.append(group)
            if len(informative) >= r.min_informative_groups or not self.cfg.algorithm.drop_zero_variance:
                break
        timing = {"time_generate": t_gen, "time_score": t_score, "tokens_per_s": tokens / max(t_gen, 1e-9),
                  "rounds": rnd + 1, "episodes_reused": reused}
        return (informative if self.cfg.algorithm.drop_zero_variance else sampled), sampled, timing

    def _keep(self, record: EpisodeRecord) -> EpisodeRecord:
        if self.store is not None:
            self.store.add_episode(record)
        return record

    def _sample(self, step, rnd, tasks, families, seed, stored) -> tuple[list[EpisodeRecord], float]:
        """G single-turn attempts per task (one batch, shared prompt caches), each verified.
        Prompts whose attempts are all stored are not sampled again; sample j of prompt i
        always draws from the stream (seed, i, j). Returns (records, env seconds)."""
        r = self.cfg.rollout
        g = r.group_size
        todo = [i for i in range(len(tasks)) if any(i * g + j not in stored for j in range(g))]
        params = SamplingParams(temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens, n=g, seed=seed)
        comps = self.rollout.sample([chat_prompt_ids(self.tokenizer, tasks[i].prompt) for i in todo], params,
                                    [row_seeds(seed, i, g) for i in todo])
        t = time.perf_counter()
        scores = self.rollout.verify([tasks[i] for i in todo for _ in range(g)], [c.text for c in comps])
        t_env = time.perf_counter() - t
        records = dict(stored)
        for k, i in enumerate(todo):
            for j in range(g):
                if i * g + j not in stored:
                    score, env_s = scores[k * g + j]
                    records[i * g + j] = self._keep(completion_record((step, rnd, i * g + j), tasks[i], families[i],
                                                                      comps[k * g + j], score, env_s))
        return [records[s] for s in range(len(tasks) * g)], t_env

    def _play(self, step, rnd, tasks, families, seed, stored) -> tuple[list[EpisodeRecord], float]:
        """G multi-turn episodes per task, batched together (one env copy per episode: an env
        keeps its episode's state). Each is stored the moment it ends; stored ones are not
        played again. Returns (records, seconds generation stood waiting on envs)."""
        r = self.cfg.rollout
        g = r.group_size
        slots = [s for s in range(len(tasks) * g) if s not in stored]
        records = dict(stored)

        def done(slot: int, traj: Trajectory) -> None:
            records[slot] = self._keep(trajectory_record((step, rnd, slot), tasks[slot // g], families[slot // g], traj))

        budget = Budget(max_turns=r.max_turns, max_new_tokens=r.max_new_tokens * r.max_turns,
                        wall_s=r.episode_wall_s or None, env_step_s=r.env_step_s, max_repeats=r.max_repeats,
                        max_env_timeouts=r.max_env_timeouts, patience=r.patience, context_budget=r.context_budget)
        stats = self.rollout.play([tasks[s // g] for s in slots], slots,
                                  SamplingParams(temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens,
                                                 seed=seed), budget, r.pipeline == "overlap", done) or {}
        return [records[s] for s in range(len(tasks) * g)], stats.get("env_wait_s", 0.0)

    def _mix_rewards(self, groups: list[Group]) -> None:
        """reward = verifier_weight * verifier score + model_weight * reward-model score."""
        w = self.cfg.reward
        model_scores = self.reward_model.score(groups) if self.reward_model is not None else None
        if self.reward_model is not None:
            self.reward_model.observe(groups)
        if w.verifier_weight == 1.0 and model_scores is None:
            return
        for i, g in enumerate(groups):
            g.rewards = [w.verifier_weight * r + (w.model_weight * model_scores[i][j] if model_scores else 0.0)
                         for j, r in enumerate(g.rewards)]

    def update(self, batch: list[Group]) -> dict:
        """Advantages for the batch, then one optimiser step per epoch; gradients accumulate
        group by group, normalised by batch-wide counts so the split does not matter."""
        a = self.cfg.algorithm
        temperature = self.cfg.rollout.temperature
        pad = self.tokenizer.pad_token_id or 0
        # Long episodes that outgrew rollout.context_budget go on as extra one-row groups on
        # their compressed prompts; each carries its attempt's advantage.
        n = len(batch)
        owners = [(i, j) for i, g in enumerate(batch) for j, _ in g.stretches()]
        units = [*batch, *(u for g in batch for _, u in g.stretches())]
        device = self.policy.device  # the loss and advantages live beside the policy
        masks = [self._mask(g).to(device) for g in units]
        norm = Norm(tokens=float(sum(m.sum() for m in masks)), sequences=float(sum(len(g.sequences) for g in units)),
                    max_len=float(self.cfg.rollout.max_new_tokens * self.cfg.rollout.max_turns))
        beta = self.kl_ctl.beta
        use_ref = self.reference is not None and beta > 0
        # Log-probs before the update: needed for later epochs' ratios and a KL reward; with
        # one epoch otherwise, the first pass's own detached log-probs serve (ratio exactly 1).
        # Off-policy, ratios are taken against the log-probs the samples were drawn with (the
        # behaviour policy): PPO's clipped importance ratio is the correction.
        behaviour = [self._behaviour(g).to(device) for g in units] if self.cfg.rollout.max_staleness else None
        need_old = (a.epochs > 1 and behaviour is None) or (use_ref and a.kl_in == "reward")
        with torch.no_grad():
            old = [self._logprobs(self.policy, g, temperature, pad).logp for g in units] if need_old else None
            ref = [self._logprobs(self.reference, g, temperature, pad).logp for g in units] if use_ref else None
        advantages, extra = self._advantages(batch, masks[:n], old and old[:n], ref and ref[:n], beta)
        advantages += [advantages[i][j:j + 1] for i, j in owners]
        base = behaviour if behaviour is not None else old
        returns = extra.pop("_returns", None)
        idle = self._idle(advantages, use_ref)
        self.policy.train()
        sums = {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0}
        entropy = [0.0, 0.0]  # summed over the tokens that ran, and their count
        for _ in range(a.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            for i, g in enumerate(units):
                if idle[i]:
                    continue
                lp = self._logprobs(self.policy, g, temperature, pad, entropy_grad=a.entropy_coef > 0)
                before = lp.logp.detach() if base is None else base[i]
                out = policy_loss(lp.logp, before, advantages[i], masks[i], clip_low=a.clip_eps,
                                  clip_high=a.clip_eps_high, agg=a.loss_agg, norm=norm,
                                  ref_logp=ref[i] if ref is not None and a.kl_in == "loss" else None, beta=beta,
                                  kl_estimator=a.kl_estimator, entropy=lp.entropy, entropy_coef=a.entropy_coef)
                out.loss.backward()
                for k in sums:
                    sums[k] += getattr(out, k).item()
                entropy[0] += float((lp.entropy.detach() * masks[i]).sum())
                entropy[1] += float(masks[i].sum())
            if all(idle):  # nothing ran: step on zero gradients, as running the groups would have
                for p in self.policy.parameters():
                    if p.requires_grad and p.grad is None:
                        p.grad = torch.zeros_like(p)
            grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.optim.grad_clip)
            self.optimizer.step()
            if self.critic is not None:
                extra |= self.critic.update(batch, returns, masks)
        self.scheduler.step()
        self.updates += 1
        staleness = sum(self.updates - 1 - g.version for g in batch) / len(batch)
        if not self.cfg.rollout.max_staleness:
            self.rollout.sync()  # rollout copies of the policy (ray workers) take the new weights
        self.policy.eval()
        kl = sums["kl"] / a.epochs if a.kl_in == "loss" else extra.get("kl_reward", 0.0)
        metrics = {k: v / a.epochs for k, v in sums.items()} | {"kl": kl, "beta": beta, "groups_idle": sum(idle),
                                                                "entropy": entropy[0] / max(entropy[1], 1.0)}
        self.kl_ctl.update(kl)
        return metrics | {k: v for k, v in extra.items() if not k.startswith("_")} | {
            "grad_norm": float(grad_norm), "lr": self.scheduler.get_last_lr()[0], "staleness": staleness}

    def summary(self, m: dict) -> str:
        return (f"reward {m['reward_mean']:.3f} pass {m['pass_rate']:.2f} len {m['response_len']:.0f} "
                f"{m['time_step']:.1f}s/step")

    def close(self) -> None:
        """Let a batch being sampled ahead finish (its episodes land in the store, where a
        resumed run finds them), then release the rollout backend's workers."""
        if self._ahead is not None:
            try:
                self._ahead[1].result()
            except Exception:  # noqa: BLE001 - the run is over; its error was not needed
                pass
            self._ahead = None
        self.rollout.close()

    def save_extra(self, directory) -> None:
        """Checkpoint what lives beside the policy: the critic (ppo) and a reward model that trains."""
        if self.critic is not None:
            self.critic.save(directory / "critic")
        if self.reward_model is not None and self.cfg.reward.model_update_every > 0:
            self.reward_model.save(directory / "reward_model")

    def _mask(self, g: Group) -> torch.Tensor:
        """(G, C) loss mask: generated tokens, minus truncated attempts under overlong filtering."""
        width = max(1, max(len(s) for s in g.sequences))
        mask = torch.zeros(len(g.sequences), width)
        for i, m in enumerate(g.masks):
            if not (self.cfg.algorithm.overlong_filter and g.truncated[i]):
                mask[i, : len(m)] = torch.tensor(m, dtype=mask.dtype)
        return mask

    def _advantages(self, batch, masks, old, ref, beta) -> tuple[list[torch.Tensor], dict]:
        """Per-group advantages: (G,) per attempt, or (G, C) per token for ppo."""
        a, r = self.cfg.algorithm, self.cfg.rollout
        rewards = torch.tensor([g.rewards for g in batch], dtype=torch.float32)  # (N, G)
        extra: dict = {}
        if a.overlong_buffer > 0:
            lengths = torch.tensor([g.lengths for g in batch])
            rewards = rewards + a.overlong_penalty * overlong_penalty(lengths, r.max_new_tokens * r.max_turns, a.overlong_buffer)
        rewards = rewards.to(masks[0].device)
        kl_tok = None
        if ref is not None and a.kl_in == "reward":  # per-token KL penalties join the reward
            kl_tok = [KL_ESTIMATORS[a.kl_estimator](o, f) * m for o, f, m in zip(old, ref, masks)]
            extra["kl_reward"] = float(sum(k.sum() for k in kl_tok) / max(1.0, sum(float(m.sum()) for m in masks)))
        if a.name != "ppo":
            if kl_tok is not None:
                rewards = rewards - beta * torch.stack([k.sum(dim=1) for k in kl_tok])
            adv = ADVANTAGES["grpo" if a.name == "dapo" else a.name](rewards)  # (N, G); DAPO keeps GRPO's estimator
            return [adv[i] for i in range(len(batch))], extra
        # PPO: token rewards (the outcome on each attempt's last generated token), GAE over
        # the critic's values, then advantages whitened over the batch.
        c = self.cfg.critic
        advs, rets = [], []
        for i, g in enumerate(batch):
            values = self.critic.values(g)  # (G, C)
            tok = torch.zeros_like(masks[i]) if kl_tok is None else -beta * kl_tok[i]
            for j, m in enumerate(g.masks):
                last = max((t for t, on in enumerate(m) if on), default=None)
                if last is not None:
                    tok[j, last] += rewards[i, j]
            adv, ret = gae(tok, values, masks[i], gamma=c.gamma, lam=c.lam)
            advs.append(adv)
            rets.append((ret, values))
        flat = torch.cat([adv[m > 0] for adv, m in zip(advs, masks)])
        mean, std = flat.mean(), flat.std() if flat.numel() > 1 else torch.tensor(1.0)
        advs = [(adv - mean) / (std + 1e-6) * m for adv, m in zip(advs, masks)]
        extra["_returns"] = rets
        extra["value_mean"] = float(sum((v * m).sum() for (_, v), m in zip(rets, masks)) / max(1.0, float(flat.numel())))
        return advs, extra

    def _idle(self, advantages: list[torch.Tensor], use_ref: bool) -> list[bool]:
        """Units that cannot move the weights: all advantages exactly 0 (every attempt scored
        the same) and nothing else in the loss (no KL term, no entropy bonus). Their tokens stay
        in the normaliser, so skipping their forward and backward passes changes nothing."""
        a = self.cfg.algorithm
        bare = a.entropy_coef == 0 and not (use_ref and a.kl_in == "loss")
        return [bare and not bool(adv.any()) for adv in advantages]

    def _behaviour(self, g: Group) -> torch.Tensor:
        """(G, C) sampling log-probs of the group's tokens (0 off the mask)."""
        width = max(1, max(len(s) for s in g.sequences))
        out = torch.zeros(len(g.sequences), width)
        for i, lp in enumerate(g.logprobs):
            out[i, : len(lp)] = torch.tensor(lp, dtype=out.dtype)
        return out

    def _logprobs(self, model, group: Group, temperature: float, pad: int, entropy_grad: bool = False):
        return group_logprobs(model, group.prompt_ids, group.sequences, temperature, pad, entropy_grad=entropy_grad)

    def _rollout_metrics(self, sampled: list[Group], batch: list[Group], timing: dict) -> dict:
        rewards = torch.tensor([r for g in sampled for r in g.rewards])
        lengths = [sum(m) for g in sampled for m in g.masks]
        passed = [p for g in sampled for p in g.passed]
        out = {
            "reward_mean": rewards.mean().item(), "reward_std": rewards.std().item() if len(rewards) > 1 else 0.0,
            "pass_rate": sum(passed) / len(passed), "response_len": sum(lengths) / len(lengths),
            "groups_sampled": len(sampled), "groups_informative": sum(g.informative for g in sampled),
            "groups_trained": len(batch),
        }
        if len(self.sampler.domains) > 1:  # multi-domain: reward, pass rate and share of attempts per domain
            for domain in self.sampler.domains:
                groups = [g for g in sampled if g.task.id.startswith(domain + "/")]
                mine = [p for g in groups for p in g.passed]
                reward = [r for g in groups for r in g.rewards]
                out[f"reward/{domain}"] = sum(reward) / len(reward) if reward else 0.0
                out[f"pass_rate/{domain}"] = sum(mine) / len(mine) if mine else 0.0
                out[f"share/{domain}"] = len(mine) / len(passed)
        if self.multi_turn:  # how many attempts passed by each turn, and how long episodes ran
            turns = [t for g in sampled for t in g.turns]
            out["turns_mean"] = sum(turns) / len(turns)
            for k in range(1, self.cfg.rollout.max_turns + 1):
                out[f"pass_by_turn_{k}"] = sum(p and t <= k for g in sampled for p, t in zip(g.passed, g.turns)) / len(turns)
        return out

