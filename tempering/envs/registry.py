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
    from tempering.envs.terminal.env import ENV_ID as TERMINAL_ID, TerminalEnv
    from tempering.envs.terminal.repo_env import ENV_ID as REPO_ID, RepoEnv

    return {"math/arith-v1": make_arith_env, "code/humaneval-v1": HumanEvalEnv, "code/synth-v1": SynthEnv,
            "code/repair-v1": RepairEnv, "code/project-v1": ProjectEnv, TERMINAL_ID: TerminalEnv, REPO_ID: RepoEnv}


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


def make_from_config(env_cfg, max_turns: int = 1) -> SingleTurnEnv:
    """The training env an `env:` config section names: one registered env, or several
    mixed (`id: mix` with `mix: {env id: weight}`).

    With `max_turns` above 1 (rollout.max_turns), every multi-turn env in it ends its
    episodes at that many turns itself: an env that grades at its own last turn (hidden
    tests, a terminal task's tests) must reach it before the rollout budget cuts the episode,
    or the attempt would end ungraded."""
    from tempering.envs.mix import MIX_ID, make_mixed
    from tempering.errors import ConfigError

    if env_cfg.id == MIX_ID:
        env = make_mixed(env_cfg.mix)
        members = list(env.members.values())
    elif env_cfg.mix:
        raise ConfigError(f"env.mix is set but env.id is {env_cfg.id!r}: set env.id to mix to train on the mixture, "
                          f"or remove env.mix")
    else:
        env = make(env_cfg.id)
        members = [env]
    for member in members:
        if max_turns > 1 and isinstance(getattr(member, "max_turns", None), int):
            member.max_turns = max_turns
    return env
