"""Environments: task sets, verifiers and the registry.

    envs.make("math/arith-v1")      an Env with .task(split, i), .reset, .step, .verify
    envs.list()                     every registered id
"""

from tempering.envs.base import SPLITS, Env, SingleTurnEnv, split_of
from tempering.envs.registry import list_envs, make, make_from_config
from tempering.envs.check import CheckReport, check_env

list = list_envs  # noqa: A001  (envs.list() is the documented name)

__all__ = ["SPLITS", "CheckReport", "Env", "SingleTurnEnv", "check_env", "list", "list_envs", "make", "make_from_config", "split_of"]
