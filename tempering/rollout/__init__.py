"""Rollout: the InferenceClient swap point and its backends."""

from tempering.rollout.agent import Budget, run_episode, run_episodes
from tempering.rollout.base import InferenceClient
from tempering.rollout.hf import HFClient, chat_prompt_ids

__all__ = ["Budget", "HFClient", "InferenceClient", "chat_prompt_ids", "run_episode", "run_episodes"]
