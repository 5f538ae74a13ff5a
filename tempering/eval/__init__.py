"""Evaluation: accuracy with confidence intervals on held-out splits."""

from tempering.eval.accuracy import EvalResult, evaluate, wilson_interval

__all__ = ["EvalResult", "evaluate", "wilson_interval"]
