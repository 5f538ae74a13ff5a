"""The environment registry: one explicit dict from versioned id to factory."""

from __future__ import annotations

from typing import Callable

from tempering.envs.base import SingleTurnEnv
from tempering.errors import UnknownEnvError


def _native() -> dict[str, Callable[[], SingleTurnEnv]]:
    from tempering.envs.code.envs import RepairEnv, SynthEnv
    from tempering.envs.code.humaneval import HumanEvalEnv
    from tempering.envs.math.arith import make_arith_env

    return {"math/arith-v1": make_arith_env, "code/humaneval-v1": HumanEvalEnv, "code/synth-v1": SynthEnv,
            "code/repair-v1": RepairEnv}


def _registry() -> dict[str, Callable[[], SingleTurnEnv]]:
    from tempering.envs.reasoning.gym import reasoning_gym_envs

    return {**_native(), **reasoning_gym_envs()}


def list_envs() -> list[str]:
    """Every registered env id, sorted."""
    return sorted(_registry())


def make(env_id: str) -> SingleTurnEnv:
    """Build the env registered under `env_id`."""
    native = _native()
    factory = native.get(env_id) or (_registry().get(env_id) if env_id.startswith("reasoning/") else None)
    if factory is None:
        close = [e for e in list_envs() if env_id.split("/")[-1].split("-v")[0] in e][:5]
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownEnvError(f"unknown env id {env_id!r}: run `temper envs list` for the registered ids.{hint}")
    return factory()
