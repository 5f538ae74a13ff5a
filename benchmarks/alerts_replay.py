"""Replay every alert check and hacking monitor over a finished run's store, step by step,
as the trainer would have run them (with today's thresholds): which alerts would fire.

    python benchmarks/alerts_replay.py runs/smollm2-pipeline/rl
"""

from __future__ import annotations

import sys
from pathlib import Path

from _common import REPO  # noqa: F401  (puts the repository on sys.path)

from tempering.config.schema import AlertConfig
from tempering.safety.monitors import StepMonitors
from tempering.scheduler.store import STORE_FILE, Store
from tempering.trainer.alerts import AlertWatch


def replay(run_dir: Path, cfg: AlertConfig = AlertConfig()) -> tuple[list, list[dict]]:
    store = Store(Path(run_dir) / STORE_FILE)
    try:
        watch, monitors, history = AlertWatch(cfg), StepMonitors(), []
        raised = []
        for m in store.metrics():
            m = m | monitors.metrics(store.rollouts(m["step"]))
            history.append(m)
            raised += watch.check(history)
    finally:
        store.close()
    return raised, history


if __name__ == "__main__":
    for run in sys.argv[1:]:
        alerts, history = replay(Path(run))
        print(f"{run}: {len(history)} steps, {len(alerts)} alert(s)")
        for a in alerts:
            print(f"  step {a.step} {a.kind}: {a.message}")
        keys = ("drift/repeated_replies", "drift/family_jump")
        print("  max over steps: " + ", ".join(f"{k} {max(h.get(k, 0.0) for h in history):.2f}" for k in keys))
