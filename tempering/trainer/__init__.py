"""Training loops for every algorithm in config.RECIPES (RL on an env, or offline on a data
file), checkpoints and resume."""

from tempering.trainer.run import prepare_run, read_run_config, train

__all__ = ["prepare_run", "read_run_config", "train"]
