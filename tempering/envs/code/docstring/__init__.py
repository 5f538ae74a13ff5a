"""`code/docstring-v1`: procedurally generated Python functions in HumanEval's shape
(signature, docstring with examples, the model writes the body). See env.py."""

from .env import ENV_ID, FAMILIES, FAMILY_NAMES, UNSEEN_FAMILIES, DocstringEnv

__all__ = ["ENV_ID", "FAMILIES", "FAMILY_NAMES", "UNSEEN_FAMILIES", "DocstringEnv"]
