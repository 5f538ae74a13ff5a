"""Rollout: the InferenceClient swap point and its backends."""

from tempering.rollout.base import InferenceClient
from tempering.rollout.hf import HFClient, chat_prompt_ids

__all__ = ["HFClient", "InferenceClient", "chat_prompt_ids"]
