"""pass@k with the unbiased estimator of Chen et al. (2021): from n samples per problem
of which c pass, pass@k = 1 - C(n-c, k) / C(n, k), averaged over problems."""

from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from tempering.errors import ConfigError
from tempering.types import SamplingParams


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

    def summary(self) -> str:
        ks = ", ".join(f"pass@{k} {v:.3f}" for k, v in sorted(self.pass_at.items()))
        return (f"{self.env_id} {self.split}: {self.problems} problems x {self.samples} samples "
                f"(T={self.temperature}): {ks}  [{self.seconds:.0f} s]")

    def write_json(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1))


def evaluate_pass_at_k(client, env, split: str, n: int, samples: int, ks: list[int], temperature: float,
                       max_new_tokens: int, batch_size: int = 8, workers: int = 8, seed: int = 0,
                       progress: Path | None = None) -> PassKResult:
    """Sample `samples` completions for each of the first `n` problems and score them all
    (concurrently, in the sandbox for code envs).

    Problems go in chunks of `batch_size`; chunk i samples with seed `seed + i`, so a
    result does not depend on where a run was interrupted. With `progress`, each scored
    problem is appended to that JSONL file as soon as its chunk is done, and problems
    already there are not sampled again: an interrupted evaluation continues where it
    stopped. The file's first line holds the settings; a rerun with other settings is refused.
    """
    if any(k > samples for k in ks):
        raise ConfigError(f"pass@k needs k <= samples: got k={max(ks)} with {samples} samples")
    tasks = env.tasks(split, n)
    settings = {"env": env.id, "split": split, "samples": samples, "temperature": temperature,
                "max_new_tokens": max_new_tokens, "batch_size": batch_size, "seed": seed}
    done = _read_progress(progress, settings) if progress else {}
    t0 = time.perf_counter()
    with ThreadPoolExecutor(workers) as pool:
        for chunk_index, start in enumerate(range(0, len(tasks), batch_size)):
            chunk = tasks[start:start + batch_size]
            if all(t.id in done for t in chunk):
                continue
            params = SamplingParams(temperature=temperature, max_new_tokens=max_new_tokens, n=samples,
                                    seed=seed + chunk_index)
            comps = client.generate([t.prompt for t in chunk], params)
            for i, task in enumerate(chunk):
                mine = comps[i * samples:(i + 1) * samples]
                scores = list(pool.map(lambda c, t=task: env.verify(t, c.text), mine))
                done[task.id] = {"id": task.id, "n": samples, "correct": sum(s.passed for s in scores),
                                 "statuses": [s.details.get("status") for s in scores],
                                 "tokens": [len(c.token_ids) for c in mine]}
                if progress:
                    with open(progress, "a") as f:
                        f.write(json.dumps(done[task.id]) + "\n")
    per_problem = [done[t.id] for t in tasks]
    pass_at = {k: float(np.mean([pass_at_k(p["n"], p["correct"], k) for p in per_problem])) for k in ks}
    return PassKResult(env.id, split, len(tasks), samples, temperature, pass_at, time.perf_counter() - t0, per_problem)


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
