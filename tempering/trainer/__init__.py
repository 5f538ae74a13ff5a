"""Training loops (GRPO for now), checkpoints and resume."""

from tempering.trainer.run import prepare_run, read_run_config, train

__all__ = ["prepare_run", "read_run_config", "train"]
