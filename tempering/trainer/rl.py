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
              Only tokens the model generated carry loss: in a multi-turn episode the env's
              feedback and the chat template's tokens sit in the sequence but are masked.

Every algorithm is the same loop with different settings (see config.ALGORITHM_DEFAULTS):
dapo is token_mean + clip-higher + dynamic sampling + overlong filtering and penalty;
grpo averages per sequence first; dr_grpo divides by a constant length instead.
"""

from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass, field

import torch

from tempering.algorithms import ADVANTAGES, KL_ESTIMATORS
from tempering.algorithms.advantages import gae
from tempering.algorithms.kl import AdaptiveKL
from tempering.algorithms.losses import Norm, overlong_penalty, policy_loss
from tempering.config import Config
from tempering.envs import SingleTurnEnv
from tempering.rollout import Budget, HFClient, run_episodes
from tempering.scheduler import FamilyCurriculum
from tempering.trainer.logprobs import group_logprobs
from tempering.types import Completion, SamplingParams, Score, Task, Trajectory


@dataclass
class Group:
    """One prompt and G scored attempts at it.

    `sequences[i]` holds every token after the prompt: a completion, or a whole multi-turn
    episode (replies, feedback and template tokens). `masks[i]` is 1 on the tokens the model
    generated, the only ones that carry loss.
    """

    task: Task | None
    family: str | None
    prompt_ids: tuple[int, ...]
    sequences: list[tuple[int, ...]]
    masks: list[tuple[int, ...]]
    rewards: list[float]
    passed: list[bool]
    turns: list[int] = field(default_factory=list)
    """Turns each attempt took (1 for single-turn)."""
    truncated: list[bool] = field(default_factory=list)
    """Whether each attempt was cut by the token budget rather than ending on its own."""
    env_s: float = 0.0
    """Seconds spent in the env (verification, sandbox runs) for this group."""

    @property
    def lengths(self) -> list[int]:
        """Generated tokens per attempt."""
        return [sum(m) for m in self.masks]

    @property
    def informative(self) -> bool:
        return max(self.rewards) - min(self.rewards) > 1e-8

    @classmethod
    def from_completions(cls, task, family, completions: list[Completion], scores: list[Score]) -> "Group":
        return cls(task, family, completions[0].prompt_ids, [c.token_ids for c in completions],
                   [(1,) * len(c.token_ids) for c in completions], [s.value for s in scores],
                   [s.passed for s in scores], [1] * len(completions), [c.finish_reason == "length" for c in completions])

    @classmethod
    def from_trajectories(cls, task, family, trajectories: list[Trajectory]) -> "Group":
        n = trajectories[0].prompt_len
        return cls(task, family, trajectories[0].token_ids[:n], [t.token_ids[n:] for t in trajectories],
                   [t.loss_mask[n:] for t in trajectories], [t.reward for t in trajectories],
                   [bool(t.turns and t.turns[-1].info.get("passed")) for t in trajectories],
                   [len(t.turns) for t in trajectories], [t.stop_reason in ("tokens", "context") for t in trajectories],
                   sum(tu.env_s for t in trajectories for tu in t.turns))


class RLStep:
    """Holds what persists between steps (data cursor, curriculum, KL coefficient, critic)
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
        self.client = HFClient(policy, tokenizer, max_batch=config.rollout.prompts_per_step * config.rollout.group_size)
        self.multi_turn = config.rollout.max_turns > 1
        self.curriculum = FamilyCurriculum(env.families if config.train.curriculum else ())
        self.cursor = 0  # index of the next training task: the data-loader position

    # -- state for exact resume -------------------------------------------------------------
    def state_dict(self) -> dict:
        state = {"cursor": self.cursor, "curriculum": self.curriculum.state_dict(), "kl": self.kl_ctl.state_dict()}
        if self.reward_model is not None:
            state["reward_model"] = self.reward_model.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.cursor = state["cursor"]
        self.curriculum.load_state_dict(state["curriculum"])
        self.kl_ctl.load_state_dict(state["kl"])
        if self.reward_model is not None:
            self.reward_model.load_state_dict(state["reward_model"])

    # -- the step -----------------------------------------------------------------------------
    def step(self, step: int) -> dict:
        t0 = time.perf_counter()
        batch, sampled, timing = self.collect(step)                       # generate + score + filter
        t_update = time.perf_counter()
        update = self.update(batch) if batch else {"skipped_update": 1}   # advantage + update
        if self.reward_model is not None:                                  # keep the reward model current
            update |= self.reward_model.maybe_update(step)
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
            if self.multi_turn:
                groups = self._play(tasks, families, seed)
                t_env = sum(g.env_s for g in groups)
                t_gen += time.perf_counter() - t - t_env
                t_score += t_env
            else:
                completions = self.client.generate([task.prompt for task in tasks], SamplingParams(**params_base, seed=seed))
                t_gen += time.perf_counter() - t
                t = time.perf_counter()
                groups = []
                for i, (task, fam) in enumerate(zip(tasks, families)):
                    comps = completions[i * r.group_size : (i + 1) * r.group_size]
                    groups.append(Group.from_completions(task, fam, comps, [self.env.verify(task, c.text) for c in comps]))
                t_score += time.perf_counter() - t
            t = time.perf_counter()
            self._mix_rewards(groups)
            t_score += time.perf_counter() - t
            for group in groups:
                tokens += sum(sum(m) for m in group.masks)
                self.curriculum.update(group.family, group.informative)
                sampled.append(group)
                if group.informative:
                    informative.append(group)
            if len(informative) >= r.min_informative_groups or not self.cfg.algorithm.drop_zero_variance:
                break
        timing = {"time_generate": t_gen, "time_score": t_score, "tokens_per_s": tokens / max(t_gen, 1e-9), "rounds": rnd + 1}
        return (informative if self.cfg.algorithm.drop_zero_variance else sampled), sampled, timing

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

    def _play(self, tasks: list[Task], families: list, seed: int) -> list[Group]:
        """G multi-turn episodes per task, all batched together; one env copy per episode
        (an env keeps its episode's state between reset and the last step)."""
        r = self.cfg.rollout
        g = r.group_size
        trajectories = run_episodes(
            lambda: copy.copy(self.env), [t for t in tasks for _ in range(g)], self.client,
            SamplingParams(temperature=r.temperature, top_p=r.top_p, max_new_tokens=r.max_new_tokens, seed=seed),
            Budget(max_turns=r.max_turns, max_new_tokens=r.max_new_tokens * r.max_turns))
        return [Group.from_trajectories(task, fam, trajectories[i * g:(i + 1) * g])
                for i, (task, fam) in enumerate(zip(tasks, families))]

    def update(self, batch: list[Group]) -> dict:
        """Advantages for the batch, then one optimiser step per epoch; gradients accumulate
        group by group, normalised by batch-wide counts so the split does not matter."""
        a = self.cfg.algorithm
        temperature = self.cfg.rollout.temperature
        pad = self.tokenizer.pad_token_id or 0
        masks = [self._mask(g) for g in batch]
        norm = Norm(tokens=float(sum(m.sum() for m in masks)), sequences=float(sum(len(g.sequences) for g in batch)),
                    max_len=float(self.cfg.rollout.max_new_tokens * self.cfg.rollout.max_turns))
        beta = self.kl_ctl.beta
        use_ref = self.reference is not None and beta > 0
        # Log-probs before the update: needed for later epochs' ratios and a KL reward; with
        # one epoch otherwise, the first pass's own detached log-probs serve (ratio exactly 1).
        need_old = a.epochs > 1 or (use_ref and a.kl_in == "reward")
        with torch.no_grad():
            old = [self._logprobs(self.policy, g, temperature, pad).logp for g in batch] if need_old else None
            ref = [self._logprobs(self.reference, g, temperature, pad).logp for g in batch] if use_ref else None
        advantages, extra = self._advantages(batch, masks, old, ref, beta)
        returns = extra.pop("_returns", None)
        self.policy.train()
        sums = {"loss": 0.0, "kl": 0.0, "clip_frac": 0.0, "entropy": 0.0}
        for _ in range(a.epochs):
            self.optimizer.zero_grad(set_to_none=True)
            for i, g in enumerate(batch):
                lp = self._logprobs(self.policy, g, temperature, pad, entropy_grad=a.entropy_coef > 0)
                before = lp.logp.detach() if old is None else old[i]
                out = policy_loss(lp.logp, before, advantages[i], masks[i], clip_low=a.clip_eps,
                                  clip_high=a.clip_eps_high, agg=a.loss_agg, norm=norm,
                                  ref_logp=ref[i] if ref is not None and a.kl_in == "loss" else None, beta=beta,
                                  kl_estimator=a.kl_estimator, entropy=lp.entropy, entropy_coef=a.entropy_coef)
                out.loss.backward()
                for k in sums:
                    sums[k] += getattr(out, k).item()
            grad_norm = torch.nn.utils.clip_grad_norm_(self.policy.parameters(), self.cfg.optim.grad_clip)
            self.optimizer.step()
            if self.critic is not None:
                extra |= self.critic.update(batch, returns, masks)
        self.scheduler.step()
        self.policy.eval()
        kl = sums["kl"] / a.epochs if a.kl_in == "loss" else extra.get("kl_reward", 0.0)
        metrics = {k: v / a.epochs for k, v in sums.items()} | {"kl": kl, "beta": beta}
        self.kl_ctl.update(kl)
        return metrics | {k: v for k, v in extra.items() if not k.startswith("_")} | {
            "grad_norm": float(grad_norm), "lr": self.scheduler.get_last_lr()[0]}

    def summary(self, m: dict) -> str:
        return (f"reward {m['reward_mean']:.3f} pass {m['pass_rate']:.2f} len {m['response_len']:.0f} "
                f"{m['time_step']:.1f}s/step")

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
        if self.multi_turn:  # how many attempts passed by each turn, and how long episodes ran
            turns = [t for g in sampled for t in g.turns]
            out["turns_mean"] = sum(turns) / len(turns)
            for k in range(1, self.cfg.rollout.max_turns + 1):
                out[f"pass_by_turn_{k}"] = sum(p and t <= k for g in sampled for p, t in zip(g.passed, g.turns)) / len(turns)
        return out

