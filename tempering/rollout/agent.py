"""The agent loop: one multi-turn episode, token-in/token-out.

The conversation is kept as token ids from start to end. Each model turn appends exactly
the tokens it sampled (loss mask 1), so training sees what the policy produced, never a
re-tokenisation of its text. What the environment says next is rendered with the chat
template and appended as the tokens that close the model's turn and open the next one
(loss mask 0).
"""

from __future__ import annotations

import queue
import random
import threading
import time
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Sequence

from tempering.envs.infra import INFRA_STOP, is_infra_failure
from tempering.envs.protocols import CompressesContext
from tempering.errors import TaskError
from tempering.rollout.engine import Request, mix
from tempering.rollout.hf import chat_prompt_ids
from tempering.types import Completion, Message, SamplingParams, Segment, StepResult, Task, Trajectory, Turn


@dataclass(frozen=True)
class Budget:
    """Per-episode limits and watchdogs. The first one reached ends the episode, and the
    trajectory's `stop_reason` says which."""

    max_turns: int = 4
    max_new_tokens: int = 4096
    """Generated tokens over the whole episode ("tokens")."""
    max_context: int = 8192
    """Total tokens: prompt, feedback and generations ("context")."""
    wall_s: float | None = None
    """Seconds from the episode's start; checked after each turn ("wall_time")."""
    env_step_s: float = 120.0
    """Deadline of one env step (a sandbox run, a verifier); past it the episode ends and
    its env is abandoned ("env_timeout"). Nothing else can hang the loop."""
    max_repeats: int = 0
    """End after this many identical actions in a row ("repeated_action"); 0: off."""
    max_env_timeouts: int = 0
    """End after this many turns in a row whose run timed out in the sandbox
    (StepResult.status == "timeout") ("timeouts"); 0: off."""
    patience: int = 0
    """End after this many turns without a new best progress (StepResult.progress, else the
    turn's reward) ("no_progress"); 0: off."""
    context_budget: int = 0
    """Compress past this many tokens: when the next turn's prompt would be longer and the
    env offers `context_messages(count_tokens, budget)`, the episode goes on from a fresh
    prompt holding the env's compressed conversation (goal, key decisions, latest errors)
    and the tokens so far close as a Segment. 0: off (the whole conversation stays)."""


def _render(tokenizer, messages: Sequence[Message], generation_prompt: bool) -> str:
    return tokenizer.apply_chat_template([m.as_dict() for m in messages], tokenize=False,
                                         add_generation_prompt=generation_prompt)


def feedback_ids(tokenizer, history: Sequence[Message], reply: str, reply_ids: Sequence[int],
                 feedback: Sequence[Message]) -> list[int]:
    """The tokens between the end of the model's reply and the start of its next reply:
    the rest of the template's closing of the assistant turn (whatever the model did not
    generate itself, e.g. the newline after <|im_end|>), the feedback messages, and the
    next generation prompt."""
    opened = _render(tokenizer, history, True)
    with_reply = _render(tokenizer, [*history, Message("assistant", reply)], False)
    following = _render(tokenizer, [*history, Message("assistant", reply), *feedback], True)
    if not (with_reply.startswith(opened + reply) and following.startswith(with_reply)):
        raise TaskError("this chat template is not prefix-stable across turns; multi-turn episodes need one that is")
    closing = with_reply[len(opened) + len(reply):]
    if reply_ids and reply_ids[-1] in set(tokenizer.all_special_ids):
        end = tokenizer.decode(list(reply_ids[-1:]))
        if closing.startswith(end):
            closing = closing[len(end):]  # the model produced the end-of-turn token itself
    return list(tokenizer.encode(closing + following[len(with_reply):], add_special_tokens=False))


class TokenCount:
    """Tokens in a text, by the policy's tokenizer: the measure envs compress a conversation
    by. A plain object, so it can travel to an env in another process (Ray)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer = tokenizer

    def __call__(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))


class _Episode:
    def __init__(self, index: int, env, task: Task, tok, seed: int) -> None:
        self.index, self.env, self.task, self.seed = index, env, task, seed
        self.messages = list(env.reset(task))
        self.ids = chat_prompt_ids(tok, self.messages)
        self.prompt_len = len(self.ids)
        self.mask, self.logprobs = [0] * len(self.ids), [0.0] * len(self.ids)
        self.turns: list[Turn] = []
        self.generated = 0
        self.terminated, self.stop = False, ""
        self.started = time.monotonic()
        self.ended: float | None = None
        self.best = float("-inf")
        self.stale = 0  # turns since progress last improved
        self.timeouts = 0  # sandbox timeouts in a row
        self.closed: list[Segment] = []  # stretches already compressed away (context_budget)

    def room(self, params: SamplingParams, budget: Budget) -> int:
        room = min(params.max_new_tokens, budget.max_new_tokens - self.generated, budget.max_context - len(self.ids))
        if room <= 0:
            self.stop = "tokens" if budget.max_new_tokens - self.generated <= 0 else "context"
        return room

    def turn_seed(self) -> int:
        """The random stream of this episode's next reply: fixed by (seed, episode, turn),
        so it does not depend on batching or on how episodes are interleaved."""
        return mix(self.seed, self.index, len(self.turns))

    def record(self, comp: Completion, result: StepResult | None, env_s: float, error: str | None,
               budget: Budget, tok) -> None:
        """Append a reply and the env's answer (or its failure), then apply the budget and
        watchdogs; if the episode goes on, append the feedback tokens for the next turn."""
        start = len(self.ids)
        self.ids += comp.token_ids
        self.mask += [1] * len(comp.token_ids)
        self.logprobs += comp.logprobs
        self.generated += len(comp.token_ids)
        self.messages.append(Message("assistant", comp.text))
        if result is None:  # the env failed or missed its deadline: end here, report why
            self.turns.append(Turn(action=comp.text, feedback=(), reward=0.0, info={"error": error},
                                   span=(start, len(self.ids)), env_s=env_s, segment=len(self.closed)))
            self.stop = "env_timeout" if error and error.startswith("timeout") else "env_error"
            return
        infra = is_infra_failure(result)
        self.turns.append(Turn(action=comp.text, feedback=tuple(result.messages), reward=result.reward,
                               info=dict(result.info), span=(start, len(self.ids)), env_s=env_s,
                               segment=len(self.closed), passed=result.passed, status=result.status,
                               infra_failed=infra, infra_retries=result.infra_retries))
        if infra:  # the sandbox failed on every try: going on would build on a turn the model never had
            self.stop = INFRA_STOP
            return
        if result.terminated or result.truncated:
            self.terminated = result.terminated
            self.stop = "terminated" if result.terminated else (result.truncated_by or "env")
            return
        self.stop = self._watchdog(result, budget)
        if not self.stop:
            extra = feedback_ids(tok, self.messages[:-1], comp.text, comp.token_ids, result.messages)
            self.messages += result.messages
            if budget.context_budget and len(self.ids) + len(extra) > budget.context_budget \
                    and isinstance(self.env, CompressesContext):
                self._compress(tok, budget.context_budget)
                return
            self.ids += extra
            self.mask += [0] * len(extra)
            self.logprobs += [0.0] * len(extra)

    def _compress(self, tok, budget: int) -> None:
        """Close the current stretch as a Segment and go on from a fresh prompt: the env's
        own compressed view of the conversation, fitted to `budget` tokens."""
        count, room = TokenCount(tok), budget
        try:
            while True:
                ids = chat_prompt_ids(tok, list(self.env.context_messages(count, room)))
                if len(ids) <= budget:
                    break
                room -= len(ids) - budget  # the chat template's own tokens: give the contents less room
                if room <= 0:
                    raise TaskError(f"env {getattr(self.env, 'id', '?')} cannot restate its task in {budget} tokens")
        except TaskError:  # not even the task's goal fits: end the episode as out of context
            self.stop = "context"
            return
        n = self.prompt_len
        self.closed.append(Segment(tuple(self.ids[:n]), tuple(self.ids[n:]), tuple(self.mask[n:]), tuple(self.logprobs[n:])))
        self.ids, self.prompt_len = list(ids), len(ids)
        self.mask, self.logprobs = [0] * len(ids), [0.0] * len(ids)

    def _watchdog(self, result: StepResult, budget: Budget) -> str:
        """Why to cut a continuing episode now, or "" to go on."""
        progress = float(result.reward if result.progress is None else result.progress)
        self.stale = 0 if progress > self.best else self.stale + 1
        self.best = max(self.best, progress)
        self.timeouts = self.timeouts + 1 if result.status == "timeout" else 0
        actions = [t.action for t in self.turns]
        if len(self.turns) >= budget.max_turns:
            return "turns"
        if budget.wall_s is not None and time.monotonic() - self.started > budget.wall_s:
            return "wall_time"
        if budget.max_repeats and len(actions) >= budget.max_repeats and len(set(actions[-budget.max_repeats:])) == 1:
            return "repeated_action"
        if budget.max_env_timeouts and self.timeouts >= budget.max_env_timeouts:
            return "timeouts"
        if budget.patience and self.stale >= budget.patience:
            return "no_progress"
        return ""

    def trajectory(self) -> Trajectory:
        n = self.prompt_len
        stretches = [*self.closed, Segment(tuple(self.ids[:n]), tuple(self.ids[n:]), tuple(self.mask[n:]),
                                           tuple(self.logprobs[n:]))]
        first = stretches[0]
        return Trajectory(
            task_id=self.task.id, messages=tuple(self.messages), token_ids=first.prompt_ids + first.token_ids,
            loss_mask=(0,) * len(first.prompt_ids) + first.loss_mask,
            logprobs=(0.0,) * len(first.prompt_ids) + first.logprobs, turns=tuple(self.turns),
            reward=sum(t.reward for t in self.turns), terminated=self.terminated, truncated=not self.terminated,
            stop_reason=self.stop, prompt_len=len(first.prompt_ids),
            wall_s=(self.ended or time.monotonic()) - self.started, segments=tuple(stretches[1:]),
        )


class EnvWorkers:
    """Daemon threads that run env steps, each with a deadline.

    A step that overruns `deadline_s` is reported as a timeout and abandoned: its thread is
    left to finish (or hang) on its own, a fresh thread takes its place, and a late answer
    is dropped. Exceptions come back as errors. So an env can neither hang nor crash the loop.
    """

    def __init__(self, threads: int, deadline_s: float) -> None:
        self.deadline_s = deadline_s
        self.jobs: queue.Queue = queue.Queue()
        self.results: queue.Queue = queue.Queue()
        self.started: dict[int, float] = {}
        self.inflight: set[int] = set()
        self.threads = threads
        for _ in range(threads):
            self._spawn()

    def _spawn(self) -> None:
        threading.Thread(target=self._work, daemon=True, name="env-step").start()

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            key, env, action = job
            self.started[key] = time.monotonic()
            t = time.perf_counter()
            try:
                result, error = env.step(action), None
            except Exception as exc:  # noqa: BLE001 - any env failure ends its episode, reported
                result, error = None, f"{type(exc).__name__}: {exc}"
            self.results.put((key, result, error, time.perf_counter() - t))

    def submit(self, key: int, env, action: str) -> None:
        self.inflight.add(key)
        self.jobs.put((key, env, action))

    def poll(self, timeout: float = 0.0) -> list[tuple[int, StepResult | None, str | None, float]]:
        """Answers that arrived (waiting up to `timeout` for the first), plus the steps that
        passed their deadline: (key, result or None, error or None, seconds)."""
        out = []
        try:
            item = self.results.get(timeout=timeout) if timeout > 0 else self.results.get_nowait()
            while True:
                if item[0] in self.inflight:
                    self.inflight.discard(item[0])
                    self.started.pop(item[0], None)
                    out.append(item)
                item = self.results.get_nowait()
        except queue.Empty:
            pass
        now = time.monotonic()
        for key in [k for k in self.inflight if now - self.started.get(k, now) > self.deadline_s]:
            self.inflight.discard(key)
            self.started.pop(key, None)
            out.append((key, None, f"timeout: env step exceeded its {self.deadline_s:g} s deadline", self.deadline_s))
            self._spawn()  # the stuck thread no longer counts
        return out

    def close(self) -> None:
        for _ in range(self.threads):
            self.jobs.put(None)


def run_episodes(make_env, tasks: Sequence[Task], client, params: SamplingParams, budget: Budget = Budget(),
                 env_workers: int = 8, overlap: bool = False, on_done=None,
                 ids: Sequence[int] | None = None, stats: dict | None = None) -> list[Trajectory]:
    """Play one episode per task, all at once.

    rounds (default): every round, the episodes still running generate together, then their
    env steps run concurrently (`env_workers` threads). overlap: generation never waits for
    the envs; an episode's reply goes to the env workers the moment it is sampled and its
    next turn joins the running batch as soon as the env answers (needs a client with
    `engine`, i.e. HFClient). Both give each episode the same random stream, so the same
    trajectories up to floating-point noise in batched kernels.

    `make_env()` builds one env per episode (an env holds its episode's state).
    `on_done(id, trajectory)` is called as each episode ends, e.g. to store it at once.
    `ids` name the episodes (default 0..n-1); an episode's random stream is fixed by
    (params.seed, id, turn), so a subset replayed with the same ids replays identically.
    `stats`, if given, gets "env_wait_s": seconds generation stood idle waiting for envs.
    """
    if params.n != 1:
        raise TaskError("run_episodes plays one episode per task: use SamplingParams(n=1) and repeat tasks for more")
    tok = client.tokenizer
    seed = params.seed if params.seed is not None else random.getrandbits(62)
    ids = list(range(len(tasks))) if ids is None else list(ids)
    episodes = [_Episode(i, make_env(), task, tok, seed) for i, task in zip(ids, tasks)]
    workers = EnvWorkers(max(1, min(env_workers, len(episodes))), budget.env_step_s)
    stats = {} if stats is None else stats
    stats.setdefault("env_wait_s", 0.0)
    # An episode's next turn prefills only the feedback on top of its last turn's KV cache,
    # where the client keeps one (HFClient); an ended episode's cache is let go at once.
    prefixes = getattr(client, "prefixes", None)
    reuse = nullcontext()
    if prefixes is not None:
        reuse, by_index, report = client.reusing_prefixes(), {e.index: e for e in episodes}, on_done

        def on_done(index: int, trajectory: Trajectory) -> None:
            prefixes.discard(by_index[index].ids)
            if report is not None:
                report(index, trajectory)
    try:
        with reuse:
            (_overlapped if overlap else _rounds)(episodes, client, params, budget, workers, tok, on_done, stats)
    finally:
        workers.close()
    return [e.trajectory() for e in episodes]


def _finish_if_stopped(e: _Episode, on_done) -> bool:
    if e.stop and e.ended is None:
        e.ended = time.monotonic()
        if on_done is not None:
            on_done(e.index, e.trajectory())
    return bool(e.stop)


def _rounds(episodes, client, params, budget, workers, tok, on_done, stats) -> None:
    active = list(episodes)
    while active:
        rooms = [e.room(params, budget) for e in active]
        for e in active:
            _finish_if_stopped(e, on_done)  # out of room
        active = [e for e, r in zip(active, rooms) if r > 0]
        rooms = [r for r in rooms if r > 0]
        if not active:
            break
        comps: dict[int, Completion] = {}
        for room in sorted(set(rooms)):  # one batch per distinct token allowance (usually one)
            group = [e for e, r in zip(active, rooms) if r == room]
            out = client.generate_ids([e.ids for e in group], replace(params, max_new_tokens=room),
                                      seeds=[[e.turn_seed()] for e in group])
            comps |= {e.index: c for e, c in zip(group, out)}
        for e in active:
            workers.submit(e.index, e.env, comps[e.index].text)
        by_id = {e.index: e for e in active}
        t = time.perf_counter()
        while workers.inflight:
            for key, result, error, env_s in workers.poll(timeout=0.05):
                by_id[key].record(comps[key], result, env_s, error, budget, tok)
        stats["env_wait_s"] += time.perf_counter() - t
        active = [e for e in active if not _finish_if_stopped(e, on_done)]


def _overlapped(episodes, client, params, budget, workers, tok, on_done, stats) -> None:
    engine = client.engine(params)
    replies: dict[int, Completion] = {}
    by_id = {e.index: e for e in episodes}

    def enqueue(e: _Episode) -> None:
        room = e.room(params, budget)
        if room > 0:
            engine.submit(Request(tuple(e.ids), (e.turn_seed(),), room, tag=e.index))
        else:
            _finish_if_stopped(e, on_done)

    for e in episodes:
        enqueue(e)
    with client.evaluating():
        while engine.busy or workers.inflight:
            for f in engine.step() if engine.busy else ():
                replies[f.request.tag] = f.completion
                workers.submit(f.request.tag, by_id[f.request.tag].env, f.completion.text)
            t = time.perf_counter()
            answered = workers.poll(timeout=0.0 if engine.busy else 0.05)
            if not engine.busy:
                stats["env_wait_s"] += time.perf_counter() - t
            for key, result, error, env_s in answered:
                e = by_id[key]
                e.record(replies.pop(key), result, env_s, error, budget, tok)
                if not _finish_if_stopped(e, on_done):
                    enqueue(e)


def run_episode(env, task: Task, client, params: SamplingParams, budget: Budget = Budget()) -> Trajectory:
    """Play one episode of `env` on `task` with `client` (which needs `generate_ids` and a
    `tokenizer`), within `budget`."""
    return run_episodes(lambda: env, [task], client, params, budget)[0]
