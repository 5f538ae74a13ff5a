"""Evaluation: accuracy with confidence intervals on held-out splits."""

from tempering.eval.accuracy import EvalResult, evaluate, evaluate_episodes, wilson_interval

__all__ = ["EvalResult", "evaluate", "evaluate_episodes", "wilson_interval"]
