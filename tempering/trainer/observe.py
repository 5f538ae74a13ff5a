"""What a run shows while it trains: progress, loggers and alerts, behind one `after_step`.

The run loop calls `after_step(step, metrics)` once per step and stops when it returns an
alert kind listed in `train.stop_on`; `close()` ends the loggers. Progress is a rich bar on
a terminal and one line per step otherwise (log.progress); TensorBoard and W&B are optional.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from tempering.config import Config, to_dict
from tempering.envs.infra import INFRA_STOP
from tempering.safety.monitors import StepMonitors
from tempering.scheduler.store import Store
from tempering.trainer.alerts import AlertWatch
from tempering.trainer.loggers import ProgressLines, TensorBoardLogger, WandbLogger


class _Bar:
    """The rich progress bar, as a logger."""

    def __init__(self, total: int | None, start: int, summary) -> None:  # None: an open-ended bar
        self.summary = summary
        self.bar = Progress(TextColumn("[bold]train"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("{task.fields[info]}"))
        self.bar.start()
        self.task = self.bar.add_task("train", total=total, completed=start, info="")

    def log(self, step: int, metrics: dict, episodes=()) -> None:
        self.bar.update(self.task, completed=step, info=self.summary(metrics))

    def close(self) -> None:
        self.bar.stop()


class Observers:
    """Progress, loggers and the alert watch of one run."""

    def __init__(self, cfg: Config, run_dir: Path, store: Store, total: int | None, start: int, summary,
                 progress: bool = True) -> None:
        self.cfg, self.store = cfg, store
        mode = cfg.log.progress if progress else "off"
        if mode == "auto":
            mode = "bar" if sys.stdout.isatty() else "lines"
        self.loggers: list = []
        if mode == "bar":
            self.loggers.append(_Bar(total, start, summary))
        elif mode == "lines":
            self.loggers.append(ProgressLines(total, start, cfg.train.max_minutes))
        if cfg.log.tensorboard:
            self.loggers.append(TensorBoardLogger(run_dir))
        if cfg.log.wandb != "off":
            self.loggers.append(WandbLogger(run_dir, cfg.name, cfg.log.wandb, to_dict(cfg)))
        self.watch = AlertWatch(cfg.alerts)
        self.step_monitors = StepMonitors()
        self.rollouts: list = []
        self.history = _read_history(run_dir / "metrics.jsonl")
        self.console = Console(stderr=True)

    def monitors(self, step: int) -> dict:
        """The reward-hacking monitors' metrics for the step (safety/monitors.py), from its stored attempts."""
        self.rollouts = self.store.rollouts(step)
        # an attempt the sandbox failed was never really scored: the monitors judge the others
        return self.step_monitors.metrics([r for r in self.rollouts if r.stop_reason != INFRA_STOP])

    def after_step(self, step: int, metrics: dict) -> str | None:
        """Log the step, raise its alerts; the kind of the first alert that should stop the run, or None."""
        self.history.append(metrics)
        episodes = self.rollouts if any(not isinstance(x, (_Bar, ProgressLines)) for x in self.loggers) else ()
        for logger in self.loggers:
            logger.log(step, metrics, episodes)
        stop = None
        for alert in self.watch.check(self.history):
            if self.store.add_alert(alert.step, alert.kind, alert.message):
                self.console.print(f"[bold red]alert[/] step {alert.step} {alert.kind}: {alert.message}", highlight=False)
            if alert.kind in self.cfg.train.stop_on and stop is None:
                stop = alert.kind
        return stop

    def close(self) -> None:
        for logger in self.loggers:
            logger.close()


def _read_history(path: Path) -> list[dict]:
    """Metric lines of earlier steps (a resumed run's alerts see its whole history)."""
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
