"""The environment registry: one explicit dict from versioned id to factory."""

from __future__ import annotations

from typing import Callable

from tempering.envs.base import SingleTurnEnv
from tempering.errors import UnknownEnvError


def _native() -> dict[str, Callable[[], SingleTurnEnv]]:
    from tempering.envs.code.envs import RepairEnv, SynthEnv
    from tempering.envs.code.humaneval import HumanEvalEnv
    from tempering.envs.code.project import ProjectEnv
    from tempering.envs.math.arith import make_arith_env

    return {"math/arith-v1": make_arith_env, "code/humaneval-v1": HumanEvalEnv, "code/synth-v1": SynthEnv,
            "code/repair-v1": RepairEnv, "code/project-v1": ProjectEnv}


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


def make_from_config(env_cfg) -> SingleTurnEnv:
    """The training env an `env:` config section names: one registered env, or several
    mixed (`id: mix` with `mix: {env id: weight}`)."""
    from tempering.envs.mix import MIX_ID, make_mixed
    from tempering.errors import ConfigError

    if env_cfg.id == MIX_ID:
        return make_mixed(env_cfg.mix)
    if env_cfg.mix:
        raise ConfigError(f"env.mix is set but env.id is {env_cfg.id!r}: set env.id to mix to train on the mixture, "
                          f"or remove env.mix")
    return make(env_cfg.id)
