"""Greedy accuracy of a model on an env's held-out split, with a Wilson 95% interval."""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tempering.envs import SingleTurnEnv
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
    """Per task: id, passed, extracted answer, reference, response text."""

    def summary(self) -> str:
        return (f"{self.env_id} [{self.split}] accuracy {self.accuracy:.1%} ({self.correct}/{self.n}), "
                f"95% CI [{self.ci_low:.1%}, {self.ci_high:.1%}]")

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1))


def evaluate(client: InferenceClient, env: SingleTurnEnv, split: str = "test", n: int = 200, max_new_tokens: int = 64,
             batch_size: int = 32, progress: bool = True) -> EvalResult:
    """Greedy-decode the first n tasks of `split` and score each with the env's verifier."""
    tasks = env.tasks(split, n)
    params = SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    items, tokens, t0 = [], 0, time.perf_counter()
    with Progress(TextColumn(f"[bold]eval {env.id}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  disable=not progress) as bar:
        job = bar.add_task("eval", total=n)
        for start in range(0, n, batch_size):
            chunk = tasks[start : start + batch_size]
            for task, comp in zip(chunk, client.generate([t.prompt for t in chunk], params)):
                score = env.verify(task, comp.text)
                tokens += len(comp.token_ids)
                ref = task.reference if isinstance(task.reference, (str, int, float)) else getattr(
                    task.reference, "id", str(task.reference))
                items.append({"id": task.id, "passed": score.passed, "reference": ref,
                              "status": score.status, "extracted": score.extracted, "format_ok": score.format_ok,
                              "response": comp.text})
            bar.update(job, advance=len(chunk))
    correct = sum(i["passed"] for i in items)
    low, high = wilson_interval(correct, n)
    return EvalResult(env_id=env.id, split=split, n=n, correct=correct, accuracy=correct / max(n, 1), ci_low=low, ci_high=high,
                      format_rate=sum(bool(i["format_ok"]) for i in items) / max(n, 1), mean_response_tokens=tokens / max(n, 1),
                      seconds=time.perf_counter() - t0, items=items)


def evaluate_episodes(client, env_id: str, split: str = "test", n: int = 50, max_turns: int = 3,
                      max_new_tokens: int = 256, options: dict | None = None) -> EvalResult:
    """Greedy multi-turn episodes of a FeedbackEnv-style env (each wrong reply gets its
    verdict back, up to `max_turns` replies): `accuracy` is the share passed within them,
    items add each episode's reward, turns and replies. With max_turns=1, the first reply alone."""
    from tempering import envs
    from tempering.rollout import Budget, run_episodes

    tasks = envs.make(env_id, **(options or {})).tasks(split, n)
    t0 = time.perf_counter()
    trajs = run_episodes(lambda: envs.make(env_id, **{**(options or {}), "max_turns": max_turns}), tasks, client,
                         SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens), Budget(max_turns=max_turns))
    items = [{"id": t.id, "family": t.family, "passed": bool(tr.turns[-1].passed),
              "reward": tr.reward, "turns": len(tr.turns), "status": tr.turns[-1].status,
              "replies": [turn.action for turn in tr.turns],
              "feedback": [m.content for turn in tr.turns for m in turn.feedback]} for t, tr in zip(tasks, trajs)]
    correct = sum(i["passed"] for i in items)
    low, high = wilson_interval(correct, len(items))
    tokens = sum(sum(tr.loss_mask) for tr in trajs)
    return EvalResult(env_id=env_id, split=split, n=len(items), correct=correct, accuracy=correct / max(1, len(items)),
                      ci_low=low, ci_high=high, mean_response_tokens=tokens / max(1, len(items)),
                      # the domains' "no answer found" statuses: no_answer, no_query, no_script
                      format_rate=sum(not str(i["status"]).startswith("no_") for i in items) / max(1, len(items)),
                      seconds=time.perf_counter() - t0, items=items)
