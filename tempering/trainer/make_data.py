"""Training data from any verifiable env, offline: no hub, no labels but the verifier's.

    sft_rows         each task's prompt plus the env's reference reply
    preference_rows  sample a model several times per task; a reply the verifier passes
                     against one it fails on the same prompt makes a (chosen, rejected) pair
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tempering import storage
from tempering.errors import ConfigError
from tempering.types import SamplingParams


def sft_rows(env, split: str, n: int) -> list[dict]:
    if not hasattr(env, "reference_response"):
        raise ConfigError(f"env {env.id} has no reference replies to imitate: pick an env with reference solutions")
    rows = []
    for task in env.tasks(split, n):
        messages = [m.as_dict() for m in task.prompt] + [{"role": "assistant", "content": env.reference_response(task)}]
        rows.append({"messages": messages, "task_id": task.id})
    return rows


def preference_rows(env, client, split: str, n: int, samples: int, params: SamplingParams,
                    pairs_per_task: int = 1) -> tuple[list[dict], dict]:
    """Pairs from the first n tasks of `split` (at most `pairs_per_task` each), and counts."""
    if samples < 2:
        raise ConfigError("pairs need at least 2 samples per task (--samples)")
    tasks = env.tasks(split, n)
    comps = client.generate([t.prompt for t in tasks], SamplingParams(
        temperature=params.temperature, top_p=params.top_p, max_new_tokens=params.max_new_tokens, n=samples,
        seed=params.seed))
    rows, mixed, passed = [], 0, 0
    for i, task in enumerate(tasks):
        mine = comps[i * samples:(i + 1) * samples]
        scores = [env.verify(task, c.text) for c in mine]
        passed += sum(s.passed for s in scores)
        good = [c.text for c, s in zip(mine, scores) if s.passed]
        bad = [c.text for c, s in zip(mine, scores) if not s.passed]
        if good and bad:
            mixed += 1
        for chosen, rejected in list(zip(good, bad))[:pairs_per_task]:
            rows.append({"prompt": [m.as_dict() for m in task.prompt], "chosen": chosen, "rejected": rejected,
                         "task_id": task.id})
    return rows, {"tasks": len(tasks), "tasks_with_pairs": mixed, "pairs": len(rows),
                  "pass_rate": passed / max(1, len(comps))}


def write_jsonl(rows: list[dict], out: Path | str) -> None:
    """One JSON object a line, to a path or a URL (s3://bucket/sft.jsonl: written locally, then
    uploaded whole through tempering.storage, so a reader never sees half of it)."""
    text = "".join(json.dumps(r) + "\n" for r in rows)
    if storage.is_remote(out):
        with tempfile.TemporaryDirectory(prefix="tempering-data-") as tmp:
            local = Path(tmp) / "rows.jsonl"
            local.write_text(text)
            storage.put(local, str(out))
        return
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
