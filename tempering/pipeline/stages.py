"""The pipeline's stages. Each reads what earlier stages left in the run directory, writes its
own outputs there, and can be run again after a crash: finished pieces are kept.

    eval       every (env, split) of eval.envs and eval.watch, greedy, one JSON file each
               (a resumed eval skips the files already written)
    demos      verified demonstrations from train tasks (data/demos.jsonl), the split guard
    train      sft or rl through `tempering.trainer.train`, resumed from its last checkpoint
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

from tempering import envs
from tempering.envs.protocols import episodic, splits_of
from tempering.pipeline.config import EnvEval, PipelineConfig

DEMOS_FILE = "data/demos.jsonl"


def eval_file(root: Path, stage: str, env_id: str, split: str) -> Path:
    return root / "eval" / stage / f"{env_id.replace('/', '__')}__{split}.json"


def eval_splits(cfg: PipelineConfig, env_id: str, spec: EnvEval) -> list[str]:
    """The splits of `env_id` to measure: those asked for that the env has (never train)."""
    env = envs.make(env_id, **cfg.options.get(env_id, {}))
    have = splits_of(env)
    return [s for s in (spec.splits or cfg.eval.splits) if s in have and s != "train"] or \
           [s for s in have if s != "train"][:1]


def missing_evals(cfg: PipelineConfig, root: Path, stage: str) -> list[tuple[str, EnvEval, str]]:
    """(env, spec, split) of eval stage `stage` (eval-base, ...) with no result file yet."""
    point = stage.removeprefix("eval-")
    return [(env_id, spec, split) for group in ("envs", "watch") for env_id, spec in cfg.env_evals(group).items()
            for split in eval_splits(cfg, env_id, spec) if not eval_file(root, point, env_id, split).is_file()]


def run_eval(cfg: PipelineConfig, root: Path, stage: str, model_path: str) -> dict:
    """Greedy held-out accuracy of `model_path` on every measured (env, split)."""
    from tempering.eval import evaluate
    from tempering.eval.accuracy import evaluate_episodes
    from tempering.models import load
    from tempering.rollout.engines import make_client

    todo = missing_evals(cfg, root, "eval-" + stage)
    if not todo:
        return {}
    loaded = load(model_path)
    client = make_client(cfg.eval.engine, loaded.model, loaded.tokenizer, loaded.path, max_batch=64, seed=cfg.seed)
    for env_id, spec, split in todo:
        options = cfg.options.get(env_id, {})
        env = envs.make(env_id, **options)
        tokens = spec.max_new_tokens or cfg.eval.max_new_tokens
        n = spec.n
        if split == "test" and hasattr(env, "size"):
            n = min(n, env.size(split))
        if episodic(env, spec.max_turns):  # its episodes run together: no line until they end
            print(f"[{stage}] {env_id} {split}: {n} episodes of up to {spec.max_turns} replies...", flush=True)
            result = evaluate_episodes(client, env_id, split, n, spec.max_turns, tokens, options)
        else:
            result = evaluate(client, env, split, n, tokens, cfg.eval.batch_size, progress=False,
                              log=f"[{stage}] {env_id} {split}")
        result.write_json(eval_file(root, stage, env_id, split))
        print(f"[{stage}] {result.summary()} ({result.seconds:.0f} s)", flush=True)
    if hasattr(client, "close"):
        client.close()
    return {}


def run_demos(cfg: PipelineConfig, root: Path) -> dict:
    """Verified demonstrations for the SFT stage, checked against every held-out prompt."""
    from transformers import AutoTokenizer

    from tempering.models import resolve_path
    from tempering.trainer.demos import chat_token_counter, demonstrations, humaneval_overlap, split_guard
    from tempering.trainer.make_data import write_jsonl

    tok = AutoTokenizer.from_pretrained(resolve_path(cfg.model))
    mix = cfg.demo_mix()
    max_len = cfg.stage_config("sft", cfg.model).data.max_len
    rows, per_env = demonstrations(mix, cfg.demos.tokens, chat_token_counter(tok), dict(cfg.demos.kinds),
                                   {e: o for e, o in cfg.options.items() if e in mix}, cfg.seed, max_len=max_len)
    if cfg.demos.sampled:
        sampled = _sampled_demos(cfg, chat_token_counter(tok), max_len)
        per_env += sampled
        rows += [row for e in sampled for row in e.rows]
        random.Random(f"demos|{cfg.seed}|sampled").shuffle(rows)
    overlap = humaneval_overlap(rows)  # HumanEval is measured as a domain nobody trains on: keep it so
    for i, problem in sorted(overlap.items()):
        next(e for e in per_env if e.env_id == rows[i]["env"]).drop(rows[i], f"overlaps {problem}")
    rows = [r for i, r in enumerate(rows) if i not in overlap]
    held = {env_id: (spec.n, eval_splits(cfg, env_id, spec)) for env_id, spec in cfg.env_evals("envs").items()}
    held.update({env_id: (spec.n, eval_splits(cfg, env_id, spec)) for env_id, spec in cfg.env_evals("watch").items()})
    guard = split_guard(rows, held, cfg.options)
    write_jsonl(rows, root / DEMOS_FILE)
    summary = {"file": DEMOS_FILE, "rows": len(rows), "tokens": sum(r["tokens"] for r in rows),
               "per_env": [e.summary() for e in per_env], "split_guard": guard}
    (root / "data" / "demos.json").write_text(json.dumps(summary, indent=1))
    for e in per_env:
        s = e.summary()
        print(f"[demos] {s['env']}: {s['kept']} kept ({s['tokens']} tokens, {s['kinds']}), dropped {s['dropped'] or 0}",
              flush=True)
    return {"demos": summary}


def _sampled_demos(cfg: PipelineConfig, count_tokens, max_len: int) -> list:
    """The base model's own replies for every env of demos.sampled: verified ones, or failed
    ones followed by their feedback and the fix (keep: failed)."""
    from tempering.models import load
    from tempering.rollout import HFClient
    from tempering.trainer.demos import sampled_demonstrations

    loaded = load(cfg.model)
    client = HFClient(loaded.model, loaded.tokenizer)
    return [sampled_demonstrations(env_id, client, count_tokens, spec.tokens, spec.samples, spec.temperature,
                                   spec.max_new_tokens, cfg.options.get(env_id), cfg.seed, spec.max_tasks,
                                   cfg.eval.batch_size, max_len, spec.keep, spec.start)
            for env_id, spec in cfg.sampled().items()]


def matched_control(train_cfg, root: Path):
    """The control gets the real RL stage's number of updates, not its clock: with a time budget
    the two would make different numbers of updates whenever the machine's load differs, and the
    comparison would measure that. Unchanged when the real stage has not finished."""
    from tempering.config import replace

    done = root / "stages" / "rl.json"
    if not done.is_file():
        return train_cfg
    return replace(train_cfg, train={"steps": json.loads(done.read_text())["steps"], "max_minutes": 0})


def run_train(cfg: PipelineConfig, root: Path, stage: str, model_path: str, shuffle: bool = False,
              spent_s: float = 0.0, url: str | None = None) -> dict:
    """One training stage (sft on the demonstrations, or rl from the SFT model), resumed from
    its last checkpoint when it has one, within what is left of its train.max_minutes after
    `spent_s` seconds of earlier attempts; each checkpoint published under `url` where given
    (tempering.pipeline.remote). Returns the final checkpoint's path."""
    from tempering.config import replace
    from tempering.storage import join
    from tempering.trainer import prepare_run, train
    from tempering.trainer.checkpoint import latest_checkpoint

    kind = "sft" if stage == "sft" else "rl"
    fill: dict = {"data": {"path": str(root / DEMOS_FILE)}} if kind == "sft" else {}
    if shuffle:
        fill["reward"] = {"shuffle": True}
        fill["name"] = f"{cfg.name}-{stage}"
    train_cfg = cfg.stage_config(kind, model_path, **fill)
    if shuffle:
        train_cfg = matched_control(train_cfg, root)
    budget = train_cfg.train.max_minutes
    if budget > 0 and spent_s > 0:
        train_cfg = replace(train_cfg, train={"max_minutes": max(budget - spent_s / 60, 0.1)})
    run_dir = root / stage
    resume = latest_checkpoint(run_dir) is not None
    if not resume:
        if run_dir.exists():  # killed before its first checkpoint: start the stage over
            shutil.rmtree(run_dir)
        prepare_run(train_cfg, run_dir)
    if url:  # each checkpoint published in the background while the stage trains on
        from tempering.trainer.remote import train_publishing

        train_publishing(train_cfg, run_dir, join(url, stage), resume)
    else:
        train(train_cfg, run_dir, resume=resume)  # one progress line per step in the stage's log
    final = latest_checkpoint(run_dir)
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines() if line.strip()]
    return {"checkpoint": str(final), "steps": len(metrics),
            "tokens": sum(m.get("tokens", 0) for m in metrics) if kind == "sft" else None}
