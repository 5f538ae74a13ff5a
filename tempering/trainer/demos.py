"""Verified demonstrations: SFT data that an env itself has checked, from train tasks only.

    single   the task's prompt, then the env's reference reply
    worked   the prompt, then the reference written with its working where the env has a
             form the verifier checks (finance: the arithmetic over the filing's figures,
             `Answer: (5,230 - 4,810) / 4,810 * 100 %`); single elsewhere
    repair   the prompt, a realistic wrong first attempt (the env's broken variant of the
             reference), the env's real feedback on it, then the corrected reply: the model
             learns to read a verdict and fix its answer, which is what multi-turn RL asks.
             The wrong attempt has weight 0: it is context for the fix, never a target
    tool     (envs with tools) the calls a careful worker makes, each with the tool's real
             output, then the answer: finance/filings-long-v1 reads the sections that hold
             the figures; terminal/repo-v1 runs the tests, reads the code where they fail,
             patches those lines in place, runs the tests again, DONE
    sampled  the model's own replies to train tasks, kept only where they score 1 (rejection
             sampling, `sampled_demonstrations`): replaying them keeps a skill the model
             already has, in its own words, where reference replies in other domains would
             overwrite it (SFT on code-only data turns every reply into a code block)
    self_repair  the model's own reply where it fails (weight 0), the env's real feedback on
             it, then the reference (`sampled_demonstrations(keep="failed")`): a repair whose
             mistake is one the model really makes, not one a generator wrote, and whose fix
             is a fresh answer rather than a one-edit copy of the attempt

Every demonstration is played through a fresh env episode, reply by reply, and kept only
when its last reply ends the episode with reward 1; what was dropped is counted by reason.
Demonstrations are budgeted by tokens (training time on a CPU is proportional to them):
each env gets `tokens * weight / sum(weights)` and stops drawing tasks at its share.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from tempering import envs
from tempering.envs.protocols import BrokenReference, MultiTurn
from tempering.errors import ConfigError, DataLeakError
from tempering.types import Message, Task

KINDS = ("single", "worked", "repair", "tool")
SAMPLED = "sampled"
SELF_REPAIR = "self_repair"
KEEP = ("passed", "failed")
"""What `sampled_demonstrations` keeps of the model's replies: those that score 1 (kind sampled),
or one that fails, followed by its feedback and the reference (kind self_repair)."""
TRAIN = "train"
MAX_TRIES = 4
"""Wrong first attempts tried per repair demonstration before the task is dropped."""
PASSED_EARLY = "episode ended before the correction (the wrong attempt passed)"


@dataclass
class EnvDemos:
    """What one env contributed: rows kept, tokens, and why others were dropped."""

    env_id: str
    rows: list[dict] = field(default_factory=list)
    tokens: int = 0
    kinds: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)
    tasks_tried: int = 0

    def keep(self, messages: list[Message], task: Task, kind: str, tokens: int, max_len: int | None) -> None:
        """Add a verified conversation as a row, unless it is longer than `max_len` tokens
        (the SFT's data.max_len: SFT could not train on it whole), which is counted as dropped."""
        if max_len is not None and tokens > max_len:
            self.dropped[f"{kind}: longer than sft.data.max_len ({max_len})"] += 1
            return
        if kind in ("repair", SELF_REPAIR):  # the wrong attempt is context for the fix, not a target (weight 0)
            last = max(i for i, m in enumerate(messages) if m.role == "assistant")
            messages = [Message(m.role, m.content, 0) if m.role == "assistant" and i < last else m
                        for i, m in enumerate(messages)]
        self.rows.append({"messages": [m.as_dict() for m in messages], "task_id": task.id, "env": self.env_id,
                          "kind": kind, "tokens": tokens})
        self.tokens += tokens
        self.kinds[kind] += 1

    def drop(self, row: dict, why: str) -> None:
        """Take a kept row back out, counting why."""
        self.rows.remove(row)
        self.tokens -= row["tokens"]
        self.kinds[row["kind"]] -= 1
        self.dropped[f"{row['kind']}: {why}"] += 1

    def summary(self) -> dict:
        return {"env": self.env_id, "kept": len(self.rows), "tokens": self.tokens, "kinds": dict(self.kinds),
                "dropped": dict(self.dropped), "tasks_tried": self.tasks_tried}


def _replay(env, task: Task, replies: Sequence[str]) -> tuple[list[Message], str | None]:
    """Play `replies` through a fresh episode of `task`. Returns the conversation and None
    when the last reply ended the episode with reward 1, else the reason it is dropped."""
    messages = list(env.reset(task))
    for i, reply in enumerate(replies):
        result = env.step(reply)
        messages.append(Message("assistant", reply))
        last = i == len(replies) - 1
        if result.terminated or result.truncated:
            if not last:
                if result.reward >= 1.0:
                    return messages, PASSED_EARLY
                return messages, f"episode ended at reply {i + 1} of {len(replies)} ({result.status or 'no status'})"
            if result.reward < 1.0:
                why = result.status or result.info.get("reason")
                return messages, f"final reply scored {result.reward:g}" + (f" ({why})" if why else "")
            return messages, None
        if last:
            return messages, "episode did not end at the final reply"
        messages.extend(result.messages)
    return messages, "no replies"


def _plans(env, task: Task, kind: str, rng: random.Random) -> list[list[str]]:
    """Candidate reply sequences for a demonstration of `kind` on `task`, best first (the
    first that replays to reward 1 is kept); empty when the env cannot make this kind."""
    ref = env.reference_response(task)
    if kind == "single":
        return [[ref]]
    if kind == "repair":
        if not isinstance(env, BrokenReference) or getattr(env, "max_turns", 1) < 2:
            return []
        wrong = getattr(env, "wrong_attempts", None)  # realistic mistakes, where the env makes them
        firsts = wrong(task, rng) if wrong is not None else [env.broken_response(task)]
        return [[first, ref] for first in firsts]
    if kind == "worked":
        worked = getattr(env, "worked_response", None)  # the reference with its working, where the env writes one
        return [] if worked is None else [[worked(task)]]
    if kind == "tool":
        session = getattr(env, "tool_demonstration", None)  # the env's own replies: tool calls, then the answer
        return [] if session is None else [session(task)]
    raise ConfigError(f"unknown demonstration kind {kind!r}: use one of {', '.join(KINDS)}")


def env_demonstrations(env_id: str, count_tokens: Callable[[list[Message]], int], budget: int,
                       kinds: dict[str, float], options: dict | None = None, seed: int = 0,
                       max_tasks: int = 5000, max_len: int | None = None) -> EnvDemos:
    """Demonstrations for one env until `budget` tokens: each train task draws a kind with
    the `kinds` weights (kinds the env cannot make fall back to single). One longer than
    `max_len` tokens (the SFT's data.max_len) is dropped: SFT could not train on it whole."""
    env = envs.make(env_id, **(options or {}))
    if not hasattr(env, "reference_response"):
        raise ConfigError(f"env {env_id} has no reference replies to demonstrate: pick an env with reference solutions")
    if isinstance(env, MultiTurn) and "repair" in kinds:
        env.max_turns = max(env.max_turns, 2)
    out = EnvDemos(env_id)
    rng = random.Random(f"demos|{env_id}|{seed}")
    names, weights = list(kinds), [kinds[k] for k in kinds]
    progress = Progress(env_id, budget)
    for index in range(max_tasks):
        progress.show(out)
        if out.tokens >= budget:
            break
        task = env.task(TRAIN, index)
        out.tasks_tried += 1
        kind = rng.choices(names, weights)[0]
        plans = _plans(env, task, kind, rng)
        if not plans:
            kind, plans = "single", _plans(env, task, "single", rng)
        for replies in plans[:MAX_TRIES]:
            messages, dropped = _replay(env, task, replies)
            if dropped is None:
                break
        if dropped is not None:
            out.dropped[f"{kind}: {dropped}"] += 1
            continue
        out.keep(messages, task, kind, count_tokens(messages), max_len)
    return out


class Progress:
    """A line every `every_s` seconds while an env's demonstrations are made (a fresh run's
    stage otherwise says nothing for many minutes): tasks tried and kept, tokens, ETA."""

    def __init__(self, env_id: str, budget: int, every_s: float = 30.0) -> None:
        self.env_id, self.budget, self.every_s = env_id, budget, every_s
        self.t0 = self.last = time.monotonic()

    def show(self, out: "EnvDemos") -> None:
        now = time.monotonic()
        if now - self.last < self.every_s:
            return
        self.last = now
        rate = out.tokens / max(now - self.t0, 1e-9)
        eta = f", ETA {max(self.budget - out.tokens, 0) / rate / 60:.1f} min" if rate > 0 else ""
        print(f"[demos] {self.env_id}: {out.tasks_tried} tasks tried, {len(out.rows)} kept, "
              f"{out.tokens:,}/{self.budget:,} tokens{eta}", flush=True)


def sampled_demonstrations(env_id: str, client, count_tokens: Callable[[list[Message]], int], budget: int,
                           samples: int = 1, temperature: float = 0.0, max_new_tokens: int = 160,
                           options: dict | None = None, seed: int = 0, max_tasks: int = 2000,
                           batch_size: int = 32, max_len: int | None = None, keep: str = "passed",
                           start: int = 0) -> EnvDemos:
    """The model behind `client` answers train tasks of `env_id` (`samples` replies each, at
    `temperature`; 0 is greedy) until `budget` tokens are kept; a task gives at most one row.

    keep passed: its first reply that ended on its own (not cut at `max_new_tokens`) and replays
    through a fresh episode to reward 1 (kind sampled). keep failed: its first reply that does
    not pass, as a wrong attempt of weight 0, the env's feedback on it, and the env's reference
    reply, replayed to reward 1 (kind self_repair; the env must give feedback between replies).
    Drops are counted like the reference demonstrations', or longer than `max_len`. Tasks are
    train tasks `start`, `start + 1`, ... (past the reference demonstrations' to keep them apart)."""
    from tempering.types import SamplingParams

    where = f"demos.sampled.{env_id}"
    if samples < 1 or max_new_tokens < 1:
        raise ConfigError(f"{where}: samples and max_new_tokens must be >= 1, got {samples} and {max_new_tokens}")
    if keep not in KEEP:
        raise ConfigError(f"{where}: keep must be one of {', '.join(KEEP)}, got {keep!r}")
    env = envs.make(env_id, **(options or {}))
    if keep == "failed":
        if not isinstance(env, MultiTurn) or not hasattr(env, "reference_response"):
            raise ConfigError(f"{where}: keep failed needs an env that gives feedback between replies and has "
                              f"reference replies (code/docstring-v1, sql/sqlite-v1, finance/statements-v1, ...)")
        env.max_turns = max(env.max_turns, 2)
    params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, n=samples, seed=seed)
    out = EnvDemos(env_id)
    progress = Progress(f"{env_id} ({keep} replies of the model)", budget)
    for first in range(start, start + max_tasks, batch_size):
        progress.show(out)
        if out.tokens >= budget:
            break
        tasks = [env.task(TRAIN, i) for i in range(first, min(first + batch_size, start + max_tasks))]
        completions = client.generate([t.prompt for t in tasks], params)
        for i, task in enumerate(tasks):
            if out.tokens >= budget:
                break
            out.tasks_tried += 1
            replies = completions[i * samples:(i + 1) * samples]
            kind, kept, why = (_kept_pass(env, task, replies) if keep == "passed"
                               else _kept_repair(env, task, replies))
            if kept is None:
                out.dropped[f"{kind}: {why}"] += 1
                continue
            out.keep(kept, task, kind, count_tokens(kept), max_len)
    return out


def _kept_pass(env, task: Task, replies) -> tuple[str, list[Message] | None, str]:
    """The first finished reply that scores 1, as a conversation."""
    for reply in replies:
        if reply.finish_reason == "length":  # its last number passed by luck, not as an answer
            continue
        messages, dropped = _replay(env, task, [reply.text])
        if dropped is None:
            return SAMPLED, messages, ""
    return SAMPLED, None, f"no finished reply of {len(replies)} scored 1"


def _kept_repair(env, task: Task, replies) -> tuple[str, list[Message] | None, str]:
    """The first reply that fails, its feedback and the reference fix, as a conversation. A
    reply cut at max_new_tokens is a real mistake too (the model rambles), so it may be it."""
    why = f"every one of {len(replies)} replies passed"
    for reply in replies:
        messages, dropped = _replay(env, task, [reply.text, env.reference_response(task)])
        if dropped is None:
            return SELF_REPAIR, messages, ""
        if dropped != PASSED_EARLY:
            why = dropped
    return SELF_REPAIR, None, why


def demonstrations(mix: dict[str, float], tokens: int, count_tokens, kinds: dict[str, float] | None = None,
                   options: dict[str, dict] | None = None, seed: int = 0,
                   max_len: int | None = None) -> tuple[list[dict], list[EnvDemos]]:
    """Demonstrations for every env of `mix` (env id -> weight), `tokens` split by weight,
    shuffled together (seeded) so a batch mixes domains."""
    if not mix:
        raise ConfigError("demonstrations need at least one env: set sft.mix (env id -> weight)")
    total = sum(mix.values())
    if total <= 0 or any(w < 0 for w in mix.values()):
        raise ConfigError(f"sft.mix weights must be >= 0 with a positive sum, got {mix}")
    kinds = kinds or {"single": 1.0}
    per_env = [env_demonstrations(env_id, count_tokens, int(tokens * w / total), kinds, (options or {}).get(env_id),
                                  seed, max_len=max_len) for env_id, w in mix.items() if w > 0]
    rows = [row for e in per_env for row in e.rows]
    random.Random(f"demos|{seed}").shuffle(rows)
    return rows, per_env


def chat_token_counter(tokenizer) -> Callable[[list[Message]], int]:
    """Tokens of a conversation as training sees it (the chat template applied)."""
    from tempering.trainer.data import tokenize_chat

    return lambda messages: len(tokenize_chat(tokenizer, messages).ids)


def humaneval_overlap(rows: Sequence[dict]) -> dict[int, str]:
    """Rows that contain a HumanEval prompt or canonical solution (over 40 characters, as text
    in any message): row index -> problem id. A generated task can meet one by coincidence (a
    textbook gcd loop is HumanEval/13's solution); such rows are dropped, HumanEval stays unseen."""
    from tempering.envs.code.humaneval import load_humaneval

    needles = [(p.id, text.strip()) for p in load_humaneval()
               for text in (p.prompt, p.reference[len(p.prompt):]) if len(text.strip()) > 40]
    hits = {}
    for i, row in enumerate(rows):
        blob = "\n".join(m["content"] for m in row["messages"])
        for problem, text in needles:
            if text in blob:
                hits[i] = problem
                break
    return hits


def split_guard(rows: Sequence[dict], held_out: dict[str, tuple[int, Sequence[str]]],
                options: dict[str, dict] | None = None) -> dict:
    """Prove that no held-out task can reach the training data, or raise DataLeakError.

    Checks every row: its task is a train task; for envs split by prompt hash, its prompt
    hashes to train; no prompt of the first n tasks of each held-out split in `held_out`
    (env id -> (n, splits)) appears in any row, and nothing from HumanEval does (its
    prompts and canonical solutions, searched as text in every message)."""
    from tempering.envs.base import split_of
    from tempering.envs.code.humaneval import load_humaneval
    from tempering.envs.protocols import FixedSize

    problems = []
    for row in rows:
        if f"/{TRAIN}/" not in row["task_id"]:
            problems.append(f"{row['task_id']}: not a train task")
        first = next(m["content"] for m in row["messages"] if m["role"] == "user")
        env = envs.make(row["env"], **(options or {}).get(row["env"], {}))
        if not isinstance(env, FixedSize) and split_of(first) != TRAIN:
            problems.append(f"{row['task_id']}: its prompt hashes to the test split")
    texts = {m["content"] for row in rows for m in row["messages"]}
    checked = 0
    for env_id, (n, splits) in held_out.items():
        env = envs.make(env_id, **(options or {}).get(env_id, {}))
        for split in splits:
            count = min(n, env.size(split)) if isinstance(env, FixedSize) else n
            for task in env.tasks(split, count):
                checked += 1
                if any(m.content in texts for m in task.prompt if m.role == "user"):
                    problems.append(f"{task.id}: its prompt is in the training data")
    for i, problem in humaneval_overlap(rows).items():
        problems.append(f"{problem}: its prompt or solution is in the training data ({rows[i]['task_id']})")
    if problems:
        raise DataLeakError(f"{len(problems)} held-out item(s) reached the training data, e.g. "
                            f"{'; '.join(problems[:3])}: demonstrations must come from train tasks only")
    return {"rows": len(rows), "held_out_prompts_checked": checked,
            "humaneval_problems_checked": len(load_humaneval()), "leaks": 0}
