"""pass@k with the unbiased estimator of Chen et al. (2021): from n samples per problem
of which c pass, pass@k = 1 - C(n-c, k) / C(n, k), averaged over problems.

A sample whose sandbox failed on every try (envs/infra.py) is not scored: n counts only the
scored samples, `infra_failed` the others, and a problem left with fewer than k scored
samples takes no part in pass@k."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tempering.config.schema import RolloutConfig
from tempering.envs.infra import InfraRetry, is_infra_failure
from tempering.errors import ConfigError
from tempering.rollout.base import StreamingClient
from tempering.types import SamplingParams

SAMPLER = "row-streams"
"""How samples are drawn (each row from its own seeded stream); a progress file written by
another sampler is not continued."""


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for one problem (numerically stable product form)."""
    if not 0 <= c <= n or k < 1:
        raise ValueError(f"need 0 <= c <= n and k >= 1, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1)))


@dataclass
class PassKResult:
    env_id: str
    split: str
    problems: int
    samples: int
    temperature: float
    pass_at: dict[int, float]
    seconds: float
    per_problem: list[dict] = field(default_factory=list)
    infra_failed: int = 0
    """Samples not scored: the sandbox failed on every try."""

    def summary(self) -> str:
        ks = ", ".join(f"pass@{k} {v:.3f}" for k, v in sorted(self.pass_at.items()))
        infra = f"; {self.infra_failed} samples not scored (the sandbox failed)" if self.infra_failed else ""
        return (f"{self.env_id} {self.split}: {self.problems} problems x {self.samples} samples "
                f"(T={self.temperature}): {ks}{infra}  [{self.seconds:.0f} s]")

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1))


def evaluate_pass_at_k(client, env, split: str, n: int, samples: int, ks: list[int], temperature: float,
                       max_new_tokens: int, batch_size: int = 8, workers: int = 8, seed: int = 0,
                       progress: Path | None = None, infra_retries: int = RolloutConfig.infra_retries) -> PassKResult:
    """Sample `samples` completions for each of the first `n` problems and score them all
    (concurrently, in the sandbox for code envs).

    Problems go in chunks of `batch_size`; chunk i samples with seed `seed + i`, so a
    result does not depend on where a run was interrupted. With an HFClient all problems
    stream through one continuous batch and each is scored as soon as its samples are done.
    With `progress`, each scored problem is appended to that JSONL file, and problems
    already there are not sampled again: an interrupted evaluation continues where it
    stopped. The file's first line holds the settings; a rerun with other settings is refused.
    """
    if any(k > samples for k in ks):
        raise ConfigError(f"pass@k needs k <= samples: got k={max(ks)} with {samples} samples")
    tasks = env.tasks(split, n)
    settings = {"env": env.id, "split": split, "samples": samples, "temperature": temperature,
                "max_new_tokens": max_new_tokens, "batch_size": batch_size, "seed": seed, "sampler": SAMPLER}
    done = _read_progress(progress, settings) if progress else {}
    t0 = time.perf_counter()

    checked = InfraRetry(env, infra_retries)

    def record(task, comps, scores) -> None:
        real = [s for s in scores if not is_infra_failure(s)]
        done[task.id] = {"id": task.id, "n": len(real), "correct": sum(s.passed for s in real),
                         "infra_failed": len(scores) - len(real), "statuses": [s.status for s in scores],
                         "tokens": [len(c.token_ids) for c in comps]}
        if progress:
            with open(progress, "a") as f:
                f.write(json.dumps(done[task.id]) + "\n")

    # chunk i samples with seed + i: the result does not depend on where a run stopped
    todo = [(seed + start // batch_size, i, task) for start in range(0, len(tasks), batch_size)
            for i, task in enumerate(tasks[start:start + batch_size]) if task.id not in done]
    with ThreadPoolExecutor(workers) as pool:
        score = lambda task, comps: list(pool.map(lambda c: checked.verify(task, c.text), comps))  # noqa: E731
        if isinstance(client, StreamingClient):
            verify_each = lambda task, comps: [checked.verify(task, c.text) for c in comps]  # noqa: E731
            _stream(client, todo, samples, temperature, max_new_tokens, pool, verify_each, record)
        else:
            for chunk_seed in sorted({s for s, _, _ in todo}):
                chunk = [t for s, _, t in todo if s == chunk_seed]
                params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, n=samples, seed=chunk_seed)
                comps = client.generate([t.prompt for t in chunk], params)
                for i, task in enumerate(chunk):
                    mine = comps[i * samples:(i + 1) * samples]
                    record(task, mine, score(task, mine))
    per_problem = [done[t.id] for t in tasks]
    pass_at = {k: _mean([pass_at_k(p["n"], p["correct"], k) for p in per_problem if p["n"] >= k]) for k in ks}
    return PassKResult(env.id, split, len(tasks), samples, temperature, pass_at, time.perf_counter() - t0, per_problem,
                       infra_failed=sum(p.get("infra_failed", 0) for p in per_problem))


def _mean(values: list[float]) -> float:
    """The mean; NaN where no problem had enough scored samples."""
    return float(np.mean(values)) if values else float("nan")


def _stream(client, todo, samples: int, temperature: float, max_new_tokens: int, pool, score, record) -> None:
    """All problems through one continuous-batching engine: as a problem's samples finish,
    the sandbox scores them (problems concurrently on `pool`) while generation goes on."""
    from tempering.rollout.engine import Request, row_seeds
    from tempering.rollout.hf import chat_prompt_ids

    engine = client.engine(SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, n=samples))
    for chunk_seed, i, task in todo:  # the same streams as generate() on the chunk with seed chunk_seed
        engine.submit(Request(tuple(chat_prompt_ids(client.tokenizer, task.prompt)), row_seeds(chunk_seed, i, samples),
                              max_new_tokens, tag=task))
    pending: dict[str, list] = {}
    scoring = []

    def drain(wait: bool) -> None:
        for fut in [f for f in scoring if wait or f.done()]:
            scoring.remove(fut)
            record(*fut.result())

    with client.evaluating():
        while engine.busy:
            for f in engine.step():
                comps = pending.setdefault(f.request.tag.id, [None] * samples)
                comps[f.sample] = f.completion
                if all(c is not None for c in comps):
                    task = f.request.tag
                    scoring.append(pool.submit(lambda t, cs: (t, cs, score(t, cs)), task, pending.pop(task.id)))
            drain(wait=False)
    drain(wait=True)


def _read_progress(path: Path, settings: dict) -> dict[str, dict]:
    """Problems already scored in `path` (creating it with a settings line if new)."""
    if not path.exists() or path.stat().st_size == 0:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"settings": settings}) + "\n")
        return {}
    lines = path.read_text().splitlines()
    try:
        first = json.loads(lines[0])["settings"]
    except (ValueError, KeyError, TypeError):
        raise ConfigError(f"{path} is not a pass@k progress file (its first line has no settings): "
                          "pass another --progress path") from None
    if first != settings:
        diff = ", ".join(f"{k} {first.get(k)!r} there vs {v!r} now" for k, v in settings.items() if first.get(k) != v)
        raise ConfigError(f"{path} holds an evaluation with other settings ({diff}): "
                          "rerun with the same settings to continue it, or pass another --progress path")
    done = {}
    for line in lines[1:]:
        try:
            row = json.loads(line)
        except ValueError:
            continue  # a line cut short by a kill: that problem is sampled again
        done[row["id"]] = row
    return done
