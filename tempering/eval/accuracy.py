"""Greedy accuracy of a model on an env's held-out split, with a Wilson 95% interval.

An answer whose sandbox failed on every try (envs/infra.py: re-run up to `infra_retries`
times) is an infrastructure failure, not a wrong answer: it is counted in `infra_failed`,
and accuracy and its interval are over the `scored` answers only.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tempering.config.schema import RolloutConfig
from tempering.envs import SingleTurnEnv
from tempering.envs.infra import InfraRetry, is_infra_failure
from tempering.rollout import InferenceClient
from tempering.types import SamplingParams


def wilson_interval(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    """Wilson score interval for k successes in n trials (better than normal near 0 and 1)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


@dataclass
class EvalResult:
    env_id: str
    split: str
    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    format_rate: float
    """Share of replies that used the requested answer format (when the verifier reports it)."""
    mean_response_tokens: float
    seconds: float
    items: list[dict] = field(default_factory=list)
    """Per task: id, passed, infra_failed, extracted answer, reference, response text."""
    infra_failed: int = 0
    """Tasks whose answer could not be scored: the sandbox failed on every try."""
    scored: int | None = None
    """Tasks really scored (n - infra_failed): accuracy, its CI and format_rate are over these."""
    first_correct: int | None = None
    """Multi-reply evaluations: tasks passed on the first reply, before any feedback (None for one reply)."""
    repeated: int | None = None
    """Multi-reply evaluations: episodes where a reply after feedback repeats an earlier reply word
    for word (the feedback was not used; None for one reply)."""

    def __post_init__(self) -> None:
        if self.scored is None:
            self.scored = self.n - self.infra_failed

    def summary(self) -> str:
        line = (f"{self.env_id} [{self.split}] accuracy {self.accuracy:.1%} ({self.correct}/{self.scored}), "
                f"95% CI [{self.ci_low:.1%}, {self.ci_high:.1%}]")
        if self.first_correct is not None:
            line += f"; first reply {self.first_correct}/{self.scored}"
        if self.repeated:
            line += f"; {self.repeated} repeated an earlier reply word for word"
        if self.infra_failed:
            line += (f"; {self.infra_failed} of {self.n} not scored (the sandbox failed on every try): "
                     f"accuracy is over the {self.scored} scored")
        return line

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1))


def _scored(env_id: str, split: str, items: list[dict], tokens: int, seconds: float, format_ok) -> EvalResult:
    """The result over `items`, infra-failed ones counted apart; `format_ok(item)` says whether
    a reply had the answer format asked for."""
    real = [i for i in items if not i["infra_failed"]]
    correct = sum(bool(i["passed"]) for i in real)
    low, high = wilson_interval(correct, len(real))
    return EvalResult(env_id=env_id, split=split, n=len(items), correct=correct, accuracy=correct / max(1, len(real)),
                      ci_low=low, ci_high=high, format_rate=sum(map(format_ok, real)) / max(1, len(real)),
                      mean_response_tokens=tokens / max(1, len(items)), seconds=seconds, items=items,
                      infra_failed=len(items) - len(real), scored=len(real))


class ProgressLines:
    """`<prefix>: 64/100 answered, 3 passed, ETA 1.2 min`, at most every `every_s` seconds and
    once at the end: an evaluation's progress in a log, where a progress bar would not show."""

    def __init__(self, prefix: str, total: int, every_s: float = 30.0) -> None:
        self.prefix, self.total, self.every_s = prefix, total, every_s
        self.t0 = self.last = time.monotonic()

    def show(self, done: int, passed: int) -> None:
        now = time.monotonic()
        if now - self.last < self.every_s and done < self.total:
            return
        self.last = now
        eta = (self.total - done) * (now - self.t0) / done / 60 if done else 0.0
        print(f"{self.prefix}: {done}/{self.total} answered, {passed} passed, ETA {eta:.1f} min", flush=True)


def evaluate(client: InferenceClient, env: SingleTurnEnv, split: str = "test", n: int = 200, max_new_tokens: int = 64,
             batch_size: int = 32, progress: bool = True,
             infra_retries: int = RolloutConfig.infra_retries, log: str | None = None) -> EvalResult:
    """Greedy-decode the first n tasks of `split` and score each with the env's verifier
    (re-run up to `infra_retries` times while its sandbox fails). `log`, for a log off a
    terminal (the pipeline's): a line with that prefix after each batch, at most every 30 s."""
    tasks = env.tasks(split, n)
    lines = ProgressLines(log, n) if log else None
    checked = InfraRetry(env, infra_retries)
    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    items, tokens, t0 = [], 0, time.perf_counter()
    with Progress(TextColumn(f"[bold]eval {env.id}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress) as bar:
        job = bar.add_task("eval", total=n)
        for start in range(0, n, batch_size):
            chunk = tasks[start : start + batch_size]
            for task, comp in zip(chunk, client.generate([t.prompt for t in chunk], params)):
                score = checked.verify(task, comp.text)
                tokens += len(comp.token_ids)
                ref = task.reference if isinstance(task.reference, (str, int, float)) else getattr(
                    task.reference, "id", str(task.reference))
                items.append({"id": task.id, "passed": score.passed, "infra_failed": is_infra_failure(score),
                              "reference": ref,
                              "status": score.status, "extracted": score.extracted, "format_ok": score.format_ok,
                              "response": comp.text})
            bar.update(job, advance=len(chunk))
            if lines:
                lines.show(len(items), sum(bool(i["passed"]) for i in items))
    return _scored(env.id, split, items, tokens, time.perf_counter() - t0, lambda i: bool(i["format_ok"]))


def evaluate_episodes(client, env_id: str, split: str = "test", n: int = 50, max_turns: int = 3,
                      max_new_tokens: int = 256, options: dict | None = None,
                      infra_retries: int = RolloutConfig.infra_retries) -> EvalResult:
    """Greedy multi-turn episodes of a FeedbackEnv-style env (each wrong reply gets its
    verdict back, up to `max_turns` replies): `accuracy` is the share passed within them,
    items add each episode's reward, turns and replies. With max_turns=1, the first reply alone.
    A step whose sandbox fails is re-run up to `infra_retries` times; an episode still failing is not scored."""
    from tempering import envs
    from tempering.rollout import Budget, run_episodes

    tasks = envs.make(env_id, **(options or {})).tasks(split, n)
    t0 = time.perf_counter()

    def make_env():
        return InfraRetry(envs.make(env_id, **{**(options or {}), "max_turns": max_turns}), infra_retries)

    trajs = run_episodes(make_env, tasks, client, SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens),
                         Budget(max_turns=max_turns))
    items = [{"id": t.id, "family": t.family, "passed": bool(tr.turns[-1].passed), "infra_failed": tr.infra_failed,
              "reward": tr.reward, "turns": len(tr.turns), "status": tr.turns[-1].status,
              "replies": [turn.action for turn in tr.turns],
              "feedback": [m.content for turn in tr.turns for m in turn.feedback]} for t, tr in zip(tasks, trajs)]
    tokens = sum(sum(tr.loss_mask) for tr in trajs)
    # the domains' "no answer found" statuses: no_answer, no_query, no_script
    result = _scored(env_id, split, items, tokens, time.perf_counter() - t0,
                     lambda i: not str(i["status"]).startswith("no_"))
    if max_turns > 1:  # an episode ends at its first pass: one turn and passed is a first-reply pass
        result.first_correct = sum(i["passed"] and i["turns"] == 1 for i in items if not i["infra_failed"])
        result.repeated = sum(repeats_a_reply(i["replies"]) for i in items if not i["infra_failed"])
    return result


def repeats_a_reply(replies: list[str]) -> bool:
    """Whether a reply after the first is, whitespace at its ends aside, one given before it.

    >>> repeats_a_reply(["a", "b ", "b"]), repeats_a_reply(["a", "b"])
    (True, False)
    """
    seen: set[str] = set()
    for reply in replies:
        if reply.strip() in seen:
            return True
        seen.add(reply.strip())
    return False
