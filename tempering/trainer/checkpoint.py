"""Checkpoints: HF-format weights that transformers loads as they are, plus trainer state.

    checkpoints/step-N/
        config.json, model.safetensors, tokenizer files   (save_pretrained)
        optimizer.pt                                      (optimiser, LR scheduler, RNG states)
        trainer_state.json                                (step, data cursor, curriculum, ...)
        critic/                                           (ppo: the value model, HF format)

A checkpoint is written to `step-N.tmp` and renamed into place, so a crash mid-save leaves
the last good checkpoint untouched; `latest` only ever sees complete directories.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import torch
from transformers.utils import logging as hf_logging

_STEP_DIR = re.compile(r"^step-(\d+)$")


def save_checkpoint(run_dir: Path, step: int, model, tokenizer, optimizer, scheduler, state: dict[str, Any], keep: int = 2,
                    extra: Callable[[Path], None] | None = None) -> Path:
    """Write checkpoint step-N atomically; `extra(dir)` adds more files (a critic) before the rename."""
    root = run_dir / "checkpoints"
    final = root / f"step-{step}"
    tmp = root / f"step-{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    hf_logging.disable_progress_bar()  # one line per shard would break the run's progress bar
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    rng = {"torch": torch.get_rng_state(), "python": random.getstate()}
    torch.save({"optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict(), "rng": rng}, tmp / "optimizer.pt")
    if extra is not None:
        extra(tmp)
    (tmp / "trainer_state.json").write_text(json.dumps(state, indent=1))
    _fsync_tree(tmp)
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in list_checkpoints(run_dir)[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def _fsync_tree(root: Path) -> None:
    """Flush every file to disk before the rename publishes the checkpoint."""
    for path in [*root.rglob("*"), root]:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def list_checkpoints(run_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    root = run_dir / "checkpoints"
    if not root.is_dir():
        return []
    found = [(int(m.group(1)), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name)) and (p / "trainer_state.json").is_file()]
    return [p for _, p in sorted(found)]


def latest_checkpoint(run_dir: Path) -> Path | None:
    ckpts = list_checkpoints(run_dir)
    return ckpts[-1] if ckpts else None


def load_trainer_state(ckpt: Path, optimizer, scheduler) -> dict[str, Any]:
    blob = torch.load(ckpt / "optimizer.pt", map_location="cpu", weights_only=True)
    optimizer.load_state_dict(blob["optimizer"])
    scheduler.load_state_dict(blob["scheduler"])
    if "rng" in blob:
        torch.set_rng_state(blob["rng"]["torch"])
        random.setstate(_tuples(blob["rng"]["python"]))
    return json.loads((ckpt / "trainer_state.json").read_text())


def _tuples(x):
    """random.setstate needs tuples where torch.load may hand back lists."""
    return tuple(_tuples(v) for v in x) if isinstance(x, (list, tuple)) else x
