"""A run at a URL (`temper train --run-dir s3://bucket/run`): trained in a local mirror, published
after every checkpoint through tempering.storage.

    $TEMPERING_HOME/mirrors/<url-slug>/            the run directory the trainer sees (a cache)
    $TEMPERING_HOME/mirrors/<url-slug>/.uploads/   what the checkpoints being published are read from

Each checkpoint is saved locally first (trainer/checkpoint.py); then `Uploader` stages it with
the run's top-level files (config, metrics, store) as they are at that step, and a background
thread publishes the staged copies, one checkpoint at a time and in order, the run files first
and the manifest last: training goes on while a checkpoint uploads. A failed upload is retried
(storage.retry_s); a store still down after that stops the run with one StorageError line
naming the newest checkpoint in the store and the newest local one. A resume takes the newer of
the store's newest complete checkpoint and the mirror's own.
"""

from __future__ import annotations

import hashlib
import os
import queue
import re
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Callable

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


class Uploader:
    """`train`'s publish callback: stage each checkpoint, publish it in a background thread.

    uploads = Uploader(url, mirror, keep, retry_s)
    train(..., publish=uploads)   # returns at each checkpoint once it is staged
    uploads.close()               # waits for the pending uploads; StorageError if one failed

    A failed upload is retried with backoff for `retry_s` seconds while training goes on; after
    that the failure is raised at the next checkpoint or at close, and nothing more goes up."""

    def __init__(self, url: str, run_dir: Path, keep: int, retry_s: float, published: int | None = None) -> None:
        self.url, self.run_dir, self.keep, self.retry_s = url, run_dir, keep, retry_s
        self.published = published  # the newest step this run knows the store holds
        self.failure: StorageError | None = None
        self.jobs: queue.Queue[tuple[Path, int] | None] = queue.Queue()
        self.stopping = threading.Event()
        shutil.rmtree(run_dir / STAGING, ignore_errors=True)  # left by a killed process
        self.thread = threading.Thread(target=self._work, name="tempering-upload", daemon=True)
        self.thread.start()

    def __call__(self, run_dir: Path, ckpt: Path, step: int) -> None:
        self._raise_failure()
        self.jobs.put((stage_checkpoint(run_dir, ckpt, step), step))

    def close(self, wait: bool = True) -> None:
        """Wait for the pending uploads and raise the failure, if any. wait=False (training failed
        or was interrupted): stop retrying, drop what has not started, raise nothing."""
        self.jobs.put(None)
        if not wait:
            self.stopping.set()  # an upload under way ends with the process (a cut upload: ignored)
            return
        self.thread.join()
        shutil.rmtree(self.run_dir / STAGING, ignore_errors=True)
        self._raise_failure()

    def _raise_failure(self) -> None:
        if self.failure is None:
            return
        stored = f"step-{self.published}" if self.published is not None else "none"
        local = latest_checkpoint(self.run_dir)
        where = f"the newest local checkpoint is {local.name}, in {local}" if local else "no local checkpoint"
        raise StorageError(f"{self.failure}. The store's newest checkpoint of this run: {stored}; {where}; "
                           f"`temper train --resume {self.url}` continues from it once the store answers")

    def _work(self) -> None:
        while (job := self.jobs.get()) is not None:
            staged, step = job
            try:
                if self.failure is None and not self.stopping.is_set():
                    self._publish(staged, step)
                    self.published = step
            except StorageError as e:
                self.failure = e  # raised at the next checkpoint or at close; later checkpoints stay local
            finally:
                shutil.rmtree(staged, ignore_errors=True)

    def _publish(self, staged: Path, step: int) -> None:
        """Run files, then the checkpoint and its manifest. Each try starts whole: publish_checkpoint
        takes a half-uploaded step-N over."""
        def attempt() -> None:
            storage.put_run_files(staged / "run", self.url)
            storage.publish_checkpoint(staged / "checkpoint", self.url, step, self.keep)
        self.retrying(f"checkpoint step-{step}", attempt)

    def retrying(self, what: str, attempt: Callable[[], None]) -> None:
        """attempt() until it raises no StorageError, with backoff (1 s doubling to 30 s), for up to
        `retry_s` seconds after its first failure; then a StorageError naming `what`, the tries and the last error."""
        give_up, delay, tries = None, 1.0, 0
        while True:
            tries += 1
            try:
                attempt()
                if tries > 1:
                    print(f"{what} published to {self.url} on try {tries}", file=sys.stderr, flush=True)
                return
            except StorageError as e:
                now = time.monotonic()
                if give_up is None:
                    give_up = now + self.retry_s
                    if self.retry_s > 0:
                        print(f"{what}: upload failed ({e}); retrying for up to {self.retry_s:g} s (storage.retry_s)",
                              file=sys.stderr, flush=True)
                if now >= give_up or self.stopping.wait(min(delay, give_up - now)):
                    raise StorageError(f"could not publish {what} to {self.url} (tried {tries} time(s) over "
                                       f"{self.retry_s:g} s, storage.retry_s); the last error: {e}") from e
                delay = min(delay * 2, 30.0)


STAGING = ".uploads"


def stage_checkpoint(run_dir: Path, ckpt: Path, step: int) -> Path:
    """What publishing step-N reads, fixed now: the run's top-level files copied as they are at
    this step (storage.snapshot_run_files), so a visible manifest never has older run files, and
    the checkpoint hard-linked. Links are as stable as a copy at no cost in bytes or time:
    save_checkpoint writes each file once (in step-N.tmp, renamed) and never rewrites it, and
    keep_checkpoints' pruning of the mirror then removes only its own names. A filesystem
    without hard links gets a copy."""
    staged = run_dir / STAGING / f"step-{step}"
    shutil.rmtree(staged, ignore_errors=True)
    try:
        shutil.copytree(ckpt, staged / "checkpoint", copy_function=os.link)
    except OSError:
        shutil.rmtree(staged / "checkpoint", ignore_errors=True)
        shutil.copytree(ckpt, staged / "checkpoint")
    storage.snapshot_run_files(run_dir, staged / "run")
    return staged


def train_remote(url: str, cfg: Config | None, steps: int | None = None, progress: bool = True, env=None) -> list[dict]:
    """Start (cfg given) or resume (cfg None) the run at `url`. Returns once every checkpoint is
    published and the run files are synced again; a storage failure raises StorageError."""
    from tempering.trainer.run import prepare_run, read_run_config

    resume = cfg is None
    if resume:
        mirror = pull_remote_run(url)
        cfg = read_run_config(mirror)
    else:
        mirror = new_remote_run(url, cfg)
        prepare_run(cfg, mirror)
    return train_publishing(cfg, mirror, url, resume, steps=steps, progress=progress, env=env)


def train_publishing(cfg: Config, run_dir: Path, url: str, resume: bool, **train_kwargs) -> list[dict]:
    """`train` in `run_dir` with every checkpoint published to `url` in the background (Uploader);
    returns once all are published and the run files synced again. The pipeline's training stages
    run through here too."""
    from tempering.trainer.run import train

    uploads = Uploader(url, run_dir, cfg.train.keep_checkpoints, cfg.storage.retry_s,
                       storage.latest_complete(url) if resume else None)
    try:
        metrics = train(cfg, run_dir, resume=resume, publish=uploads, **train_kwargs)
    except BaseException as e:
        # The run failed (or is interrupted): what it saved still goes up, but not on Ctrl-C, and
        # its own error is the one reported.
        try:
            uploads.close(wait=not isinstance(e, KeyboardInterrupt))
        except StorageError:
            pass
        raise
    uploads.close()
    uploads.retrying("the run files", lambda: storage.sync_run_files(run_dir, url))
    return metrics
