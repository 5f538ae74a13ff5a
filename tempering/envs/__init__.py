"""Environments: task sets, verifiers and the registry.

    envs.make("math/arith-v1")      an Env with .task(split, i), .reset, .step, .verify
    envs.list()                     every registered id
    envs.register(id, factory)      a domain of your own (docs/domains.md)
"""

from tempering.envs.base import SPLITS, Env, SingleTurnEnv, split_of
from tempering.envs.registry import import_envs, list_envs, make, make_from_config, register
from tempering.envs.check import CheckReport, check_env

list = list_envs  # noqa: A001  (envs.list() is the documented name)

__all__ = ["SPLITS", "CheckReport", "Env", "SingleTurnEnv", "check_env", "import_envs", "list", "list_envs", "make",
           "make_from_config", "register", "split_of"]
