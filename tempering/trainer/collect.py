"""Generate and score: the RL step's batch of groups, sampled and verified.

    generate  G completions for each of P prompts (shared prompt KV cache), or, with
              rollout.max_turns > 1, G multi-turn episodes per task
    score     the env's verifier on each attempt (an episode's return when multi-turn),
              optionally mixed with a reward model's score
    filter    dynamic sampling (DAPO): drop groups whose rewards are all equal, and sample
              more rounds until `min_informative_groups` are buffered
    infra     an attempt whose sandbox failed on every try (after rollout.infra_retries re-runs,
              envs/infra.py) is left out of its group and counted: infra/failed, infra/retried,
              infra/share; a group left with fewer than 2 real attempts is dropped

Every attempt is written to the store as it finishes; attempts already there (from a run
killed after sampling them) are read back instead of sampled again.
"""

from __future__ import annotations

import random
import time
from typing import NamedTuple

import torch

from tempering.config import Config
from tempering.rollout import Budget, chat_prompt_ids
from tempering.rollout.engine import row_seeds
from tempering.sandbox import audit
from tempering.scheduler.backends import make_rollout
from tempering.scheduler.priorities import TaskSampler
from tempering.scheduler.store import EpisodeRecord, Store
from tempering.trainer.group import Group, completion_record, trajectory_record
from tempering.types import SamplingParams, Trajectory


class Collected(NamedTuple):
    """One step's sampling: what to train on, everything sampled, and timings."""

    batch: list[Group]
    """The groups to train on (only informative ones under dynamic sampling)."""
    sampled: list[Group]
    """Every group sampled this step, for the metrics and the curriculum."""
    timing: dict
    """Seconds spent generating and scoring, tokens per second, rounds, episodes reused."""


class Collector:
    """Samples and scores groups for a step; owns the rollout backend and the task sampler."""

    def __init__(self, config: Config, env, model, tokenizer, reward_model=None):
        self.cfg = config
        self.tokenizer = tokenizer
        self.reward_model = reward_model
        self.rollout = make_rollout(config, env, model, tokenizer)
        """Where sampling, verification and episodes run (scheduler.backend)."""
        self.multi_turn = config.rollout.max_turns > 1
        self.sampler = TaskSampler(env, config.env.split, config.train.curriculum, config.train.replay)
        """Which tasks each round draws: domain quotas, family curriculum, replay of mixed tasks."""
        self.store: Store | None = None
        """Where finished attempts go (set by the run loop); None keeps nothing."""

    def collect(self, step: int, version: int) -> Collected:
        """Sample rounds of groups until enough are informative (DAPO's dynamic sampling);
        `version` is the policy's update count the groups are sampled by."""
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
                group.version = version
            t = time.perf_counter()
            self._mix_rewards(groups)
            if self.cfg.reward.shuffle:
                shuffle_rewards(groups, rng)
            t_score += time.perf_counter() - t
            for group in groups:
                tokens += sum(sum(m) for m in group.masks)
                if group.trainable:  # a group the infrastructure emptied says nothing about its task
                    self.sampler.update(group.task, group.family, group.passed, group.informative)
                sampled.append(group)
                if group.informative:
                    informative.append(group)
            if len(informative) >= r.min_informative_groups or not self.cfg.algorithm.drop_zero_variance:
                break
        timing = {"time_generate": t_gen, "time_score": t_score, "tokens_per_s": tokens / max(t_gen, 1e-9),
                  "rounds": rnd + 1, "episodes_reused": reused}
        batch = informative if self.cfg.algorithm.drop_zero_variance else [g for g in sampled if g.trainable]
        return Collected(batch, sampled, timing)

    def _keep(self, record: EpisodeRecord) -> EpisodeRecord:
        """Store a finished attempt, with the sandbox incidents its runs left (sandbox/audit.py)."""
        incidents = audit.LOG.take(record.slot)
        if self.store is not None:
            self.store.add_episode(record)
            if incidents:
                self.store.add_incidents((record.step, record.round, record.slot), incidents)
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
        scores = self.rollout.verify([tasks[i] for i in todo for _ in range(g)], [c.text for c in comps],
                                     [i * g + j for i in todo for j in range(g)])
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

    def metrics(self, got: Collected) -> dict:
        """Reward, pass rate and length of what was sampled; per domain and per turn where they apply."""
        sampled = got.sampled
        rewards = torch.tensor([r for g in sampled for r in g.rewards])
        lengths = [sum(m) for g in sampled for m in g.masks]
        passed = [p for g in sampled for p in g.passed]
        n = max(1, len(passed))  # attempts really scored (a step the infrastructure failed entirely has none)
        out = {
            "reward_mean": rewards.mean().item() if len(rewards) else 0.0,
            "reward_std": rewards.std().item() if len(rewards) > 1 else 0.0,
            "pass_rate": sum(passed) / n, "response_len": sum(lengths) / n,
            "groups_sampled": len(sampled), "groups_informative": sum(g.informative for g in sampled),
            "groups_trained": len(got.batch),
        } | infra_metrics(sampled)
        formats = [f for g in sampled for f in g.format_ok]
        if formats:
            out["format_rate"] = sum(formats) / len(formats)
        if len(self.sampler.domains) > 1:  # multi-domain: reward, pass rate and share of attempts per domain
            for domain in self.sampler.domains:
                groups = [g for g in sampled if g.task.id.startswith(domain + "/")]
                mine = [p for g in groups for p in g.passed]
                reward = [r for g in groups for r in g.rewards]
                out[f"reward/{domain}"] = sum(reward) / len(reward) if reward else 0.0
                out[f"pass_rate/{domain}"] = sum(mine) / len(mine) if mine else 0.0
                out[f"share/{domain}"] = len(mine) / n
                fmt = [f for g in groups for f in g.format_ok]
                if fmt:
                    out[f"format_rate/{domain}"] = sum(fmt) / len(fmt)
        if self.multi_turn:  # how many attempts passed by each turn, and how long episodes ran
            turns = [t for g in sampled for t in g.turns]
            out["turns_mean"] = sum(turns) / n
            for k in range(1, self.cfg.rollout.max_turns + 1):
                out[f"pass_by_turn_{k}"] = sum(p and t <= k for g in sampled for p, t in zip(g.passed, g.turns)) / n
            # of the attempts that got feedback, the share that repeated a reply word for word
            fed = [r for g in sampled for r, t in zip(g.repeated, g.turns) if t > 1]
            out["repeated_after_feedback"] = sum(fed) / len(fed) if fed else 0.0
        return out


def infra_metrics(groups: list[Group]) -> dict:
    """Attempts whose sandbox failed on every try (left out of training), re-runs after a sandbox
    failure, and the failed share of all attempts sampled (the infra alert's measure)."""
    failed = sum(g.infra_failed for g in groups)
    attempts = failed + sum(len(g.rewards) for g in groups)
    return {"infra/failed": failed, "infra/retried": sum(g.infra_retries for g in groups),
            "infra/share": failed / max(1, attempts)}


def shuffle_rewards(groups: list[Group], rng: random.Random) -> None:
    """The spurious-reward control (reward.shuffle): each group's rewards permuted among its
    attempts. The reward distribution, and so the share of informative groups, is unchanged;
    which attempt is credited is noise. `passed` stays true to the verifier, so pass rates
    still measure the policy."""
    for g in groups:
        order = list(range(len(g.rewards)))
        rng.shuffle(order)
        g.rewards = [g.rewards[i] for i in order]
