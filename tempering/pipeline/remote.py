"""A pipeline at a URL (`temper pipeline CONFIG --run-dir s3://bucket/run`, `--from s3://...`):
run in a local mirror (trainer/remote.mirror_dir), published as it goes, continued anywhere.

    <url>/pipeline.yaml, pipeline.json, report.md   the pipeline's own files
    <url>/eval/<point>/*.json, data/, stages/       each stage's outputs
    <url>/sft, rl, rl-shuffled                      the training stages, each laid out as
                                                    `temper train --run-dir URL` lays a run out

What is published when:

- a training stage publishes each checkpoint as it trains, in the background with retries
  (trainer/remote.train_publishing): its run files, the checkpoint, the manifest last, so a
  killed stage continues from its newest one;
- each time pipeline.json is written (a stage starts, finishes or fails), every file of the
  pipeline outside the training stages goes up, and pipeline.json last; when a training stage
  finishes, its run files and final checkpoint go up before them. A stage that the store's
  pipeline.json calls done has all its outputs in the store.

Paths in pipeline.json and stages/*.json name the mirror of the machine that wrote them; in the
store they name the URL instead (a finished stage's checkpoint reads s3://bucket/run/sft/
checkpoints/step-N, which `--model` takes), and a pull points them at the local mirror.

Continuing, on this machine or another: the pipeline's files come down from the store, whose
copy wins over the mirror's. A training stage's run comes down only when it is needed: a stage
resumes from the newer of the store's newest complete checkpoint and the mirror's; a stage that
starts from a finished one downloads just that checkpoint.

Not covered: two machines running one URL at once (nothing locks it); the pipeline's own files
go up between stages, and the next stage waits for them.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

import yaml

from tempering import storage
from tempering.errors import RunDirError, StorageError
from tempering.pipeline.branch import TRAIN_STAGES, branch
from tempering.trainer.checkpoint import latest_checkpoint
from tempering.trainer.remote import mirror_dir

STATE = "pipeline.json"


def _rerooted(value, old: str, new: str):
    """`value` (parsed JSON) with every string under `old`/ moved under `new`/."""
    if isinstance(value, dict):
        return {k: _rerooted(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_rerooted(v, old, new) for v in value]
    old = old.rstrip("/")
    if isinstance(value, str) and value.startswith(old + "/"):
        return new.rstrip("/") + value[len(old):]
    return value


def _holds_paths(rel: str) -> bool:
    return rel == STATE or (rel.startswith("stages/") and rel.endswith(".json"))


def _step(ckpt: Path) -> int:
    return int(ckpt.name.removeprefix("step-"))


def pull_pipeline(url: str) -> Path:
    """The mirror of the pipeline at `url`, holding the store's files of it (all but the training
    stages' runs); emptied where the store holds no pipeline yet (leftovers of another run)."""
    root = mirror_dir(url)
    remote = storage.files(url)
    if STATE not in remote:
        shutil.rmtree(root, ignore_errors=True)
        return root
    for rel in remote:
        if rel.split("/")[0] in TRAIN_STAGES:
            continue
        storage.get(storage.join(url, rel), root / rel)
        if _holds_paths(rel):
            data = _rerooted(json.loads((root / rel).read_text()), url, str(root))
            (root / rel).write_text(json.dumps(data, indent=1))
    return root


def pull_stage(root: Path, url: str, stage: str) -> None:
    """Training stage `stage` in the mirror as the store has it (its run files and newest complete
    checkpoint), unless the mirror holds that run with a checkpoint as new or newer."""
    run, run_url = root / stage, storage.join(url, stage)
    remote, local = storage.latest_complete(run_url), latest_checkpoint(run)
    if remote is None or (local is not None and _step(local) >= remote and (run / "config.yaml").is_file()):
        return
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir(parents=True)
    storage.fetch_run_files(run_url, run)
    storage.fetch_checkpoint(run_url, remote, run)


def pull_inputs(root: Path, url: str, stage: str, model: str | None) -> None:
    """What stage `stage` needs that the mirror may lack: its own run (a training stage continues
    from its newest checkpoint) and, where it starts from a finished stage, that checkpoint."""
    if stage in TRAIN_STAGES:
        pull_stage(root, url, stage)
    if model is None or Path(model).is_dir() or not Path(model).is_relative_to(root):
        return
    source, _, ckpt = Path(model).relative_to(root).parts  # <stage>/checkpoints/step-N
    storage.fetch_checkpoint(storage.join(url, source), int(ckpt.removeprefix("step-")), root / source)


def publish_pipeline(root: Path, url: str, runs: Iterable[str] = ()) -> None:
    """Upload the pipeline in `root` to `url`: the training stages named in `runs` (run files, and
    their final checkpoint where the store lacks it), then every other file, pipeline.json last."""
    try:
        for stage in (s for s in runs if s in TRAIN_STAGES and latest_checkpoint(root / s) is not None):
            final, run_url = latest_checkpoint(root / stage), storage.join(url, stage)
            storage.sync_run_files(root / stage, run_url)
            if storage.latest_complete(run_url) != _step(final):
                storage.publish_checkpoint(final, run_url, _step(final))
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        for rel in [r for r in files if r != STATE and r.split("/")[0] not in TRAIN_STAGES] + [STATE]:
            if not rel.endswith(".tmp"):
                _put(root, rel, url)
    except StorageError as e:
        raise StorageError(f"{e}. The pipeline's progress is kept in its mirror, {root}; run the same command "
                           "again once the store answers") from e


def _put(root: Path, rel: str, url: str) -> None:
    if not _holds_paths(rel):
        storage.put(root / rel, storage.join(url, rel))
        return
    data = _rerooted(json.loads((root / rel).read_text()), str(root), url)
    if rel == STATE:
        data["run_dir"] = url
    with tempfile.TemporaryDirectory(prefix="tempering-pipeline-") as tmp:
        (Path(tmp) / "copy.json").write_text(json.dumps(data, indent=1))
        storage.put(Path(tmp) / "copy.json", storage.join(url, rel))


def pull_finished(url: str) -> Path:
    """The pipeline at `url` in its mirror with every finished training stage's run: what
    `--from URL` copies from."""
    root = pull_pipeline(url)
    if not (root / STATE).is_file() or not (root / "pipeline.yaml").is_file():
        raise RunDirError(f"--from {url}: no pipeline there (no pipeline.yaml and pipeline.json)")
    records = json.loads((root / STATE).read_text())["stages"]
    for stage in TRAIN_STAGES:
        if records.get(stage, {}).get("status") == "done":
            pull_stage(root, url, stage)
    return root


def run_pipeline_at(config: str | Path, run_dir: str | None = None, overrides: list[str] | None = None,
                    control: str = "none", only: list[str] | None = None, source: str | None = None) -> dict:
    """`temper pipeline`: run_pipeline where --run-dir and --from may be URLs. A URL run works in
    its mirror and is published there; a URL source is pulled into its own mirror, branched from
    once (the same command again continues the branched run without pulling it again)."""
    from tempering.pipeline.config import load_pipeline
    from tempering.pipeline.run import run_pipeline, stages

    url = run_dir if run_dir and storage.is_remote(run_dir) else None
    root = pull_pipeline(url) if url else Path(run_dir) if run_dir else None
    if source and storage.is_remote(source):
        cfg, data = load_pipeline(config, overrides)
        root = root or Path("runs") / cfg.name
        marker = root / "branched.yaml"
        if not (marker.is_file() and yaml.safe_load(marker.read_text()).get("from") == source):
            reused = branch(pull_finished(source), root, cfg, data, [s.name for s in stages("shuffled")], source)
            print(f"== from {source}: reused {', '.join(r for r in reused if '/' not in r) or 'no stage'}", flush=True)
        source = None
    return run_pipeline(config, root, overrides, control, only, Path(source) if source else None, url=url)
