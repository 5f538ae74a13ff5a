"""Tempering: RL post-training of language models on real, executed feedback."""

__version__ = "0.1.0"
