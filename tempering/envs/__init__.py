"""Environments: task sets, verifiers and the registry.

    envs.make("math/arith-v1")      an Env with .task(split, i), .reset, .step, .verify
    envs.Env, envs.TaskSet          the contract, and its optional hooks (envs/protocols.py)
    envs.list()                     every registered id
    envs.register(id, factory)      a domain of your own (docs/domains.md)
"""

from tempering.envs.base import SingleTurnEnv, split_of
from tempering.envs.protocols import (SPLITS, BrokenReference, CompressesContext, Env, FixedSize, MultiTurn, TaskSet,
                                      families_of, splits_of, verifies_concurrently)
from tempering.envs.registry import import_envs, list_envs, make, make_from_config, register
from tempering.envs.check import CheckReport, check_env

list = list_envs  # noqa: A001  (envs.list() is the documented name)

__all__ = ["SPLITS", "BrokenReference", "CheckReport", "CompressesContext", "Env", "FixedSize", "MultiTurn",
           "SingleTurnEnv", "TaskSet", "check_env", "families_of", "import_envs", "list", "list_envs", "make",
           "make_from_config", "register", "split_of", "splits_of", "verifies_concurrently"]
