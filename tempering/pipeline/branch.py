"""`temper pipeline CONFIG --from RUN`: start a new run from another run's finished stages
wherever the new config would compute the same thing, and run only the rest.

    temper pipeline configs/smollm2-pipeline.yaml --run-dir runs/lr3e-5 --from runs/main \\
        --set rl.optim.lr=3.0e-5        # keeps base eval, demos, SFT and its eval; reruns RL

What a stage's result depends on, compared between the two configs as written:

    demos        seed, model, options, the demos section and its env mix, sft.data.max_len
    sft          the above and the sft section
    rl           the above, the rl section and the RL env mix
    rl-shuffled  as rl, and rl itself reused (it makes as many updates as rl made)
    an eval file (point, env, split): the point's model (base: the model; otherwise its
                 training stage reused), that env's options and evaluation spec (n, replies,
                 tokens per reply)

A reused stage's directory is copied in (weights hard-linked, nothing else shared, so neither
run can change the other), its record keeps its measured time and says `reused_from`. Both
runs must come from the same Tempering code: the copy cannot tell a changed generator.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path
from typing import Sequence

import yaml

from tempering.errors import RunDirError
from tempering.pipeline.config import PipelineConfig, load_pipeline
from tempering.pipeline.stages import eval_file, eval_splits

TRAIN_STAGES = ("sft", "rl", "rl-shuffled")
CHECKPOINTS = "checkpoints"
"""Files under a stage's checkpoints/ are hard-linked (a checkpoint is written once, to a new
directory, and never in place); everything else (the store, metrics, reports) is copied."""
LENGTH_KEYS = ("steps", "max_minutes")
"""rl.train keys that only say how long RL runs: a larger `steps` extends a finished stage."""


def _inputs(cfg: PipelineConfig, data: dict) -> dict[str, dict]:
    """Per training-side stage, everything its result depends on (see the module docstring)."""
    demos = {"seed": cfg.seed, "model": cfg.model, "options": cfg.options, "demos": data.get("demos", {}),
             "mix": cfg.demo_mix(), "max_len": (data.get("sft", {}).get("data") or {}).get("max_len")}
    sft = {**demos, "sft": data.get("sft", {})}
    rl = {**sft, "rl": data.get("rl", {}), "rl_envs": sorted(cfg.eval.envs)}
    return {"demos": demos, "sft": sft, "rl": rl, "rl-shuffled": rl}


def _eval_spec(cfg: PipelineConfig, env_id: str) -> dict | None:
    for group in ("envs", "watch"):
        spec = cfg.env_evals(group).get(env_id)
        if spec is not None:
            return {"n": spec.n, "max_turns": spec.max_turns, "options": cfg.options.get(env_id, {}),
                    "max_new_tokens": spec.max_new_tokens or cfg.eval.max_new_tokens}
    return None


def _copy_tree(src: Path, dst: Path) -> None:
    def copy(a: str, b: str) -> None:
        if CHECKPOINTS in Path(a).relative_to(src).parts:
            try:
                os.link(a, b)
                return
            except OSError:  # another filesystem: copy instead
                pass
        shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=copy, dirs_exist_ok=True)


def _longer(mine: dict, theirs: dict, done_steps: int) -> bool:
    """`mine` is `theirs` with only RL's length grown past the `done_steps` it made, on a
    constant learning rate (so updates 1..done_steps are the ones the longer stage makes)."""
    def cut(inputs: dict) -> dict:
        rl = dict(inputs["rl"])
        rl["train"] = {k: v for k, v in (rl.get("train") or {}).items() if k not in LENGTH_KEYS}
        return {**inputs, "rl": rl}

    steps = (mine["rl"].get("train") or {}).get("steps", 0)
    constant = (mine["rl"].get("optim") or {}).get("schedule", "constant") == "constant"
    return cut(mine) == cut(theirs) and constant and steps > done_steps


def _moved(value, src: Path, root: Path):
    """`value` with every path inside the source run re-rooted in the new one (nested too)."""
    if isinstance(value, dict):
        return {k: _moved(v, src, root) for k, v in value.items()}
    if isinstance(value, list):
        return [_moved(v, src, root) for v in value]
    if isinstance(value, str) and os.sep in value:
        try:
            return str(root / Path(value).resolve().relative_to(src.resolve()))
        except ValueError:
            return value
    return value


def _moved_text(text: str, src: Path, root: Path) -> str:
    """`text` with paths into the source run (as given or resolved, each where a path starts)
    pointing into the new one instead."""
    for a, b in ((str(src.resolve()), str(root.resolve())), (str(src), str(root))):
        text = re.sub(r"(?<![\w./-])" + re.escape(a + os.sep), lambda _, b=b: b + os.sep, text)
    return text


def branch(src: Path, root: Path, cfg: PipelineConfig, data: dict, order: Sequence[str],
           origin: str | None = None) -> list[str]:
    """Copy into `root` what `src` finished that `cfg` would compute the same way, its stages
    recorded in the pipeline's `order`; returns
    what was reused (stage names, and eval files as point/env/split). Run again with the same
    `src`, it reuses nothing more: the run goes on from where it stopped. `origin`: what the
    records name as the source (a URL whose local mirror `src` is); default `src` itself."""
    origin = origin or str(src)
    if not (src / "pipeline.yaml").is_file() or not (src / "pipeline.json").is_file():
        raise RunDirError(f"--from {src}: not a pipeline run directory (no pipeline.yaml and pipeline.json there)")
    if root.resolve() == src.resolve():
        raise RunDirError(f"--from {src} is the run directory itself: to continue it, drop --from")
    marker = root / "branched.yaml"
    if marker.is_file() and yaml.safe_load(marker.read_text()).get("from") == origin:
        return []  # branched before: the same command again continues the run
    if (root / "pipeline.json").is_file():
        raise RunDirError(f"{root} already holds a run: --from starts a new one, so pass a new --run-dir")
    src_cfg, src_data = load_pipeline(src / "pipeline.yaml")
    src_state = json.loads((src / "pipeline.json").read_text())
    done = {s for s, r in src_state["stages"].items() if r.get("status") == "done"}
    mine, theirs = _inputs(cfg, data), _inputs(src_cfg, src_data)
    reused, state = [], {"stages": {}}
    for stage in ("demos", *TRAIN_STAGES):
        needs = {"sft": "demos", "rl": "sft", "rl-shuffled": "rl"}.get(stage)
        if stage not in done or (needs and needs not in reused and f"{needs} (extended)" not in reused):
            continue
        record = src_state["stages"][stage]
        if mine[stage] == theirs[stage] and f"{needs} (extended)" not in reused:
            state["stages"][stage] = {**_moved(record, src, root), "reused_from": origin}
            reused.append(stage)
        elif stage in ("rl", "rl-shuffled") and _longer(mine[stage], theirs[stage], record.get("steps", 0)):
            # not done: the stage runs again and resumes from its last checkpoint; its time adds up
            state["stages"][stage] = {"status": "extending", "extended_from": origin, "steps_before": record["steps"],
                                      **{k: record[k] for k in ("seconds", "cpu_hours", "peak_rss_mb") if k in record}}
            reused.append(f"{stage} (extended)")
        else:
            continue
        folder = "data" if stage == "demos" else stage
        _copy_tree(src / folder, root / folder)
        if stage in ("rl", "rl-shuffled") and stage not in reused:  # its config as it now continues
            saved = root / stage / "config.yaml"
            if saved.is_file():
                saved.write_text(_moved_text(saved.read_text(), src, root))
    for point in ("base", *TRAIN_STAGES):
        if point != "base" and point not in reused:
            continue
        complete = True
        for group in ("envs", "watch"):
            for env_id, spec in cfg.env_evals(group).items():
                for split in eval_splits(cfg, env_id, spec):
                    old, new = eval_file(src, point, env_id, split), eval_file(root, point, env_id, split)
                    if old.is_file() and _eval_spec(cfg, env_id) == _eval_spec(src_cfg, env_id):
                        new.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(old, new)
                        reused.append(f"{point}/{env_id}/{split}")
                    else:
                        complete = False
        stage = f"eval-{point}"
        if complete and stage in done:
            state["stages"][stage] = {**src_state["stages"][stage], "reused_from": origin}
            reused.append(stage)
    for stage, record in state["stages"].items():  # what the child wrote, so a killed continuation finds it
        out = src / "stages" / f"{stage}.json"
        if out.is_file() and "reused_from" in record:
            (root / "stages").mkdir(parents=True, exist_ok=True)
            moved = _moved(json.loads(out.read_text()), src, root)
            (root / "stages" / f"{stage}.json").write_text(json.dumps(moved, indent=1))
    state["stages"] = {s: state["stages"][s] for s in order if s in state["stages"]}
    root.mkdir(parents=True, exist_ok=True)
    (root / "pipeline.json").write_text(json.dumps(state, indent=1))
    (root / "branched.yaml").write_text(yaml.safe_dump({"from": origin, "reused": reused}, sort_keys=False))
    return reused
