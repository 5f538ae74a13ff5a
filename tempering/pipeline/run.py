"""`temper pipeline CONFIG`: baseline eval -> demonstrations -> SFT -> eval -> RL -> eval, in one
run directory, each stage resumable after kill -9.

    runs/<name>/pipeline.yaml       the config as given (with --set applied)
    runs/<name>/pipeline.json       per stage: status, seconds, peak memory, outputs (the
                                    checkpoints, each an HF directory); per env and split:
                                    accuracy, Wilson CI, n per evaluation point, paired McNemar
    runs/<name>/report.md           the same as a table
    runs/<name>/eval/<point>/       one JSON per (env, split) with every item
    runs/<name>/data/demos.jsonl    the SFT data; demos.json says what each env gave
    runs/<name>/sft, rl, rl-shuffled   training runs (config, metrics, store, checkpoints)

Each stage runs in a child process (its peak memory is its own; the child dies with the
pipeline). A stage that finished is recorded in pipeline.json and skipped when the pipeline
runs again; one that was killed picks up from its last checkpoint or eval file.
A `--run-dir` URL (s3://bucket/run) runs in a local mirror published after each stage, and
continues on any machine: tempering.pipeline.remote.
`control="shuffled"` adds the spurious-reward control: the same RL stage from the same SFT
model with each group's rewards permuted, for as many updates as the real stage made, and its
evaluation.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from tempering.errors import ConfigError, RunDirError
from tempering.pipeline.branch import branch
from tempering.pipeline.config import PipelineConfig, load_pipeline
from tempering.pipeline.remote import STATE, publish_pipeline
from tempering.pipeline.stages import missing_evals
from tempering.scheduler.store import STORE_FILE
from tempering.pipeline.table import results_table, write_report

CONTROLS = ("none", "shuffled")


@dataclass(frozen=True)
class Stage:
    name: str
    kind: str
    """eval, demos or train."""
    source: str | None
    """The stage whose model it starts from (base: the config's model), or None."""


def stages(control: str) -> list[Stage]:
    """The stages in order; with control="shuffled" the RL stage's control and its evaluation."""
    out = [Stage("eval-base", "eval", "base"), Stage("demos", "demos", None), Stage("sft", "train", "base"),
           Stage("eval-sft", "eval", "sft"), Stage("rl", "train", "sft"), Stage("eval-rl", "eval", "rl")]
    if control == "shuffled":
        out += [Stage("rl-shuffled", "train", "sft"), Stage("eval-rl-shuffled", "eval", "rl-shuffled")]
    return out


def _training_part(data: dict) -> dict:
    """What a continued pipeline must keep: everything but `eval` (evaluation may grow)."""
    return {k: v for k, v in data.items() if k != "eval"}


def _read_state(root: Path) -> dict:
    path = root / STATE
    return json.loads(path.read_text()) if path.is_file() else {"stages": {}}


def _write_state(root: Path, state: dict, *runs: str) -> None:
    """pipeline.json, atomically. A pipeline at a URL publishes it there with every other file of
    the pipeline and the training runs of `runs` (tempering.pipeline.remote)."""
    tmp = root / (STATE + ".tmp")
    tmp.write_text(json.dumps(state, indent=1))
    tmp.replace(root / STATE)
    if state.get("url"):
        publish_pipeline(root, state["url"], runs)


def _model_of(cfg: PipelineConfig, state: dict, source: str | None) -> str | None:
    if source is None:
        return None
    if source == "base":
        return cfg.model
    done = state["stages"].get(source, {})
    if done.get("status") != "done":
        raise RunDirError(f"stage {source} has not finished: its checkpoint is needed next")
    return done["checkpoint"]


def _die_with_parent() -> None:
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _run_child(root: Path, stage: str, model: str | None, spent_s: float) -> tuple[int, float, float]:
    """Run one stage in a child process; returns (exit code, peak RSS in MB, CPU seconds of it
    and everything it reaped). `spent_s`: what earlier, killed attempts of the stage already
    used of its time budget."""
    cmd = [sys.executable, "-m", "tempering.pipeline.child", str(root), stage, model or "", f"{spent_s:.1f}"]
    proc = subprocess.Popen(cmd, preexec_fn=_die_with_parent)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def run_pipeline(config: str | Path, run_dir: Path | None = None, overrides: list[str] | None = None,
                 control: str = "none", only: list[str] | None = None, source: Path | None = None,
                 url: str | None = None) -> dict:
    """Run (or continue) every stage not yet done; returns pipeline.json's contents. `source`:
    a finished run whose stages this new run starts from where they would come out the same
    (tempering.pipeline.branch). `url`: where `run_dir`, a local mirror, is published after each
    stage (tempering.pipeline.remote)."""
    if control not in CONTROLS:
        raise ConfigError(f"unknown control {control!r}: use one of {', '.join(CONTROLS)}")
    cfg, data = load_pipeline(config, overrides)
    root = Path(run_dir or Path("runs") / cfg.name)
    saved = root / "pipeline.yaml"
    if saved.is_file():
        before, now = _training_part(yaml.safe_load(saved.read_text())), _training_part(data)
        changed = sorted(k for k in before.keys() | now.keys() if before.get(k) != now.get(k))
        if changed:
            raise RunDirError(
                f"{root} holds a pipeline trained with another config ({', '.join(changed)} differ): continue it "
                f"with the same config and --set flags (only eval may change), or start a new run directory "
                f"from its finished stages: --run-dir NEW_DIR --from {root}")
    if source is not None:
        reused = branch(Path(source), root, cfg, data, [s.name for s in stages("shuffled")])
        print(f"== from {source}: reused {', '.join(r for r in reused if '/' not in r) or 'no stage'} and "
              f"{sum('/' in r for r in reused)} eval files (branched.yaml lists them)", flush=True)
    root.mkdir(parents=True, exist_ok=True)
    saved.write_text(yaml.safe_dump(data, sort_keys=False))
    state = _read_state(root)
    state.update(config=str(config), name=cfg.name, control=control, run_dir=str(root), url=url)
    plan = stages(control)
    unknown = sorted(set(only or ()) - {s.name for s in plan})
    if unknown:
        raise ConfigError(f"unknown stage {', '.join(unknown)}: stages are {', '.join(s.name for s in plan)}")
    for stage, what, source in ((s.name, s.kind, s.source) for s in plan):
        record = state["stages"].get(stage, {})
        if only and stage not in only:
            continue
        if record.get("status") == "done" and (what != "eval" or not missing_evals(cfg, root, stage)):
            continue
        model = _model_of(cfg, state, source)
        out = root / "stages" / f"{stage}.json"
        if record.get("status") == "running" and out.is_file() and (what != "eval" or not missing_evals(cfg, root, stage)):
            # finished, then killed before it was recorded (an eval stage only if nothing it now asks for is missing)
            record.update(json.loads(out.read_text()), status="done")
            _write_state(root, state, stage)
            continue
        print(f"== {stage} ({what}{', from ' + source if source else ''})", flush=True)
        started = time.time()
        record.update(status="running", started=started, model=model,
                      attempts=record.get("attempts", 0) + 1)
        state["stages"][stage] = record
        _write_state(root, state)
        code, peak, cpu_s = _run_child(root, stage, model, record.get("seconds", 0.0))
        record.update(seconds=record.get("seconds", 0.0) + time.time() - started,
                      peak_rss_mb=max(peak, record.get("peak_rss_mb", 0.0)),
                      cpu_hours=record.get("cpu_hours", 0.0) + cpu_s / 3600)
        if code != 0 or not out.is_file():
            record["status"] = "failed"
            _write_state(root, state)
            raise RunDirError(f"stage {stage} failed (exit {code}); fix the cause and run the same command again: "
                              f"finished stages are kept")
        record.update(json.loads(out.read_text()), status="done")
        _write_state(root, state, stage)
    state["results"] = results_table(cfg, root, [s.name.removeprefix("eval-") for s in plan if s.kind == "eval"])
    _write_state(root, state)
    write_report(root, state)
    _stage_reports(root, plan)
    if url:  # again, now with the reports
        _write_state(root, state, *(s.name for s in plan if s.kind == "train"))
    return state


def _stage_reports(root: Path, plan: list[Stage]) -> None:
    """Each training stage's report.html again, now that pipeline.json holds the evaluation table."""
    from tempering.eval.report import write_report as write_html  # Plotly takes seconds to import

    for stage in plan:
        if stage.kind == "train" and (root / stage.name / STORE_FILE).is_file():
            write_html(root / stage.name)
