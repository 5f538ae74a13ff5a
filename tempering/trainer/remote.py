"""A run at a URL (`temper train --run-dir s3://bucket/run`): trained in a local mirror, published
after every checkpoint through tempering.storage.

    $TEMPERING_HOME/mirrors/<url-slug>/   the run directory the trainer sees (a cache)

Each checkpoint is saved locally first (trainer/checkpoint.py), then the run's top-level files
(config, metrics, store) are synced and the checkpoint uploaded with its manifest last.
Uploads are synchronous: the next step starts once the checkpoint is published. A storage
failure stops the run with one StorageError line; the local checkpoint stays in the mirror.
A resume takes the newer of the store's newest complete checkpoint and the mirror's own.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import sys
from pathlib import Path

from tempering import storage
from tempering.config import Config
from tempering.errors import RunDirError, StorageError
from tempering.trainer.checkpoint import latest_checkpoint


def mirror_dir(url: str) -> Path:
    """The local working copy of the run at `url`, under $TEMPERING_HOME/mirrors."""
    from tempering.models.presets import cache_dir

    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", url.split("://", 1)[-1]).strip("_")[-80:]
    return cache_dir() / "mirrors" / f"{slug}-{hashlib.sha256(url.encode()).hexdigest()[:10]}"


def _step(ckpt: Path | None) -> int:
    return int(ckpt.name.removeprefix("step-")) if ckpt is not None else -1


def new_remote_run(url: str, cfg: Config) -> Path:
    """A fresh mirror for a new run at `url`; refused where the URL already holds a run."""
    storage.configure(cfg.storage.endpoint_url)
    if storage.exists(storage.join(url, "config.yaml")) or storage.latest_complete(url) is not None:
        raise RunDirError(f"{url!r} already holds a run: continue it with `temper train --resume {url}` "
                          "or pass a new --run-dir")
    mirror = mirror_dir(url)
    shutil.rmtree(mirror, ignore_errors=True)  # leftovers of an earlier run at this URL
    return mirror


def pull_remote_run(url: str) -> Path:
    """The mirror of the run at `url`, ready to resume: the store's newest complete checkpoint
    and run files are downloaded unless the mirror already holds a checkpoint as new or newer."""
    mirror = mirror_dir(url)
    remote, local = storage.latest_complete(url), latest_checkpoint(mirror)
    newest = remote if remote is not None else -1
    if local is None and newest < 0 and not storage.exists(storage.join(url, "config.yaml")):
        raise RunDirError(f"nothing to resume at {url!r}: it holds no run (no config.yaml, no complete checkpoint)")
    if local is not None and _step(local) >= newest:
        if _step(local) > newest:
            print(f"resuming from the local mirror's {local.name} ({mirror}): newer than the store's newest "
                  f"complete checkpoint", file=sys.stderr, flush=True)
        return mirror
    shutil.rmtree(mirror, ignore_errors=True)
    mirror.mkdir(parents=True)
    storage.fetch_run_files(url, mirror)
    if remote is not None:
        storage.fetch_checkpoint(url, remote, mirror)
    return mirror


def publisher(url: str, keep: int):
    """The callback `train` runs after each local checkpoint: run files first, then the checkpoint
    and its manifest, so a visible manifest always has run files at least as new."""
    def publish(run_dir: Path, ckpt: Path, step: int) -> None:
        try:
            storage.sync_run_files(run_dir, url)
            storage.publish_checkpoint(ckpt, url, step, keep)
        except StorageError as e:
            raise StorageError(f"{e}. Checkpoint step-{step} is saved locally only, in {ckpt}; "
                               f"`temper train --resume {url}` continues from it once the store answers") from e
    return publish


def train_remote(url: str, cfg: Config | None, steps: int | None = None, progress: bool = True, env=None) -> list[dict]:
    """Start (cfg given) or resume (cfg None) the run at `url`; the run files are synced again at the end."""
    from tempering.trainer.run import prepare_run, read_run_config, train

    resume = cfg is None
    if resume:
        mirror = pull_remote_run(url)
        cfg = read_run_config(mirror)
    else:
        mirror = new_remote_run(url, cfg)
        prepare_run(cfg, mirror)
    metrics = train(cfg, mirror, steps=steps, resume=resume, progress=progress, env=env,
                    publish=publisher(url, cfg.train.keep_checkpoints))
    storage.sync_run_files(mirror, url)
    return metrics
