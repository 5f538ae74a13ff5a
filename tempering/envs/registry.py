"""The environment registry: one explicit dict from versioned id to factory."""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from typing import Callable

from tempering.envs.base import SingleTurnEnv
from tempering.envs.protocols import MultiTurn
from tempering.errors import ConfigError, UnknownEnvError


def _native() -> dict[str, Callable[[], SingleTurnEnv]]:
    from tempering.envs.cad.env import ENV_ID as CAD_ID, PartsEnv
    from tempering.envs.code.canary import CANARY_ID, CanaryEnv
    from tempering.envs.code.docstring import ENV_ID as DOCSTRING_ID, DocstringEnv
    from tempering.envs.code.docstring.steps_env import ENV_ID as STEPS_ID, StepsEnv
    from tempering.envs.code.envs import RepairEnv, SynthEnv
    from tempering.envs.code.handwritten import ENV_ID as CODE_HAND_ID, HandwrittenCodeEnv
    from tempering.envs.code.humaneval import HumanEvalEnv
    from tempering.envs.code.project import ProjectEnv
    from tempering.envs.finance.envs import FILINGS_ID, STATEMENTS_ID, FilingsEnv, StatementsEnv
    from tempering.envs.math.arith import make_arith_env
    from tempering.envs.sql.env import ENV_ID as SQL_ID, SqliteEnv
    from tempering.envs.sql.handwritten import ENV_ID as SQL_HAND_ID, HandwrittenSqlEnv
    from tempering.envs.sql.shapes.env import ENV_ID as SQL_SHAPES_ID, ShapesEnv
    from tempering.envs.terminal.env import ENV_ID as TERMINAL_ID, TerminalEnv
    from tempering.envs.terminal.repo_env import ENV_ID as REPO_ID, RepoEnv
    from tempering.envs.terminal.repo_function import ENV_ID as REPO_FUNCTION_ID, RepoFunctionEnv

    return {"math/arith-v1": make_arith_env, "code/humaneval-v1": HumanEvalEnv, "code/synth-v1": SynthEnv,
            CANARY_ID: CanaryEnv, DOCSTRING_ID: DocstringEnv, STEPS_ID: StepsEnv, CODE_HAND_ID: HandwrittenCodeEnv,
            "code/repair-v1": RepairEnv, "code/project-v1": ProjectEnv, TERMINAL_ID: TerminalEnv, REPO_ID: RepoEnv,
            REPO_FUNCTION_ID: RepoFunctionEnv, CAD_ID: PartsEnv,
            SQL_ID: SqliteEnv, SQL_HAND_ID: HandwrittenSqlEnv, SQL_SHAPES_ID: ShapesEnv, STATEMENTS_ID: StatementsEnv, FILINGS_ID: FilingsEnv}


_USER: dict[str, Callable[..., SingleTurnEnv]] = {}
"""Envs registered at run time by `register` (a user's own domains)."""
_ID = re.compile(r"^[a-z0-9_]+/[a-z0-9_.-]+-v\d+$")


def register(env_id: str, factory: Callable[..., SingleTurnEnv]) -> None:
    """Add a domain of your own: `factory(**options)` builds the env. Call it at import time
    of your module and list the module in the config's `env.imports` (or pass
    `--import MODULE` to `temper envs` and `temper eval`)."""
    if not _ID.match(env_id):
        raise ConfigError(f"env id {env_id!r} is not of the form domain/name-vN (e.g. units/convert-v1)")
    if env_id in _native() or (env_id in _USER and _USER[env_id] is not factory):
        raise ConfigError(f"env id {env_id!r} is already registered: give your env another name or version")
    _USER[env_id] = factory


def import_envs(modules) -> None:
    """Import the modules that register user envs (`env.imports`), looked up on sys.path and
    then in the current directory, as `python -m` would."""
    if modules and os.getcwd() not in sys.path:
        sys.path.append(os.getcwd())
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise ConfigError(f"env.imports: cannot import {name!r} ({e}): make it importable, e.g. run from the "
                              f"directory that holds it or add that directory to PYTHONPATH") from None


def _registry() -> dict[str, Callable[[], SingleTurnEnv]]:
    from tempering.envs.reasoning.gym import reasoning_gym_envs

    return {**_native(), **reasoning_gym_envs(), **_USER}


def list_envs() -> list[str]:
    """Every registered env id, sorted."""
    return sorted(_registry())


def make(env_id: str, **options) -> SingleTurnEnv:
    """Build the env registered under `env_id`, passing `options` to its constructor
    (e.g. difficulty=2, max_turns=3)."""
    native = _native()
    factory = native.get(env_id) or _USER.get(env_id) or (_registry().get(env_id) if env_id.startswith("reasoning/") else None)
    if factory is None:
        close = [e for e in list_envs() if env_id.split("/")[-1].split("-v")[0] in e][:5]
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise UnknownEnvError(f"unknown env id {env_id!r}: run `temper envs list` for the registered ids.{hint}")
    if not options:
        return factory()
    params = inspect.signature(factory).parameters
    unknown = sorted(set(options) - set(params))
    if unknown:
        known = ", ".join(n for n, p in params.items() if p.kind is p.POSITIONAL_OR_KEYWORD or p.kind is p.KEYWORD_ONLY)
        raise ConfigError(f"env {env_id} has no option {', '.join(map(repr, unknown))}: its options are {known or '(none)'}")
    try:
        return factory(**options)
    except (TypeError, ValueError) as e:
        raise ConfigError(f"env {env_id}: bad options {options}: {e}") from None


def make_from_config(env_cfg, max_turns: int = 1) -> SingleTurnEnv:
    """The training env an `env:` config section names: one registered env, or several
    mixed (`id: mix` with `mix: {env id: weight}`).

    With `max_turns` above 1 (rollout.max_turns), every multi-turn env in it ends its
    episodes at that many turns itself: an env that grades at its own last turn (hidden
    tests, a terminal task's tests) must reach it before the rollout budget cuts the episode,
    or the attempt would end ungraded."""
    from tempering.envs.mix import MIX_ID, make_mixed
    from tempering.errors import ConfigError

    import_envs(env_cfg.imports)
    options = dict(env_cfg.options or {})
    wanted = set(env_cfg.mix) if env_cfg.id == MIX_ID else {env_cfg.id}
    stray = sorted(set(options) - wanted)
    if stray:
        raise ConfigError(f"env.options names {', '.join(stray)}, which this run does not train on: key each env's "
                          f"options by its id, e.g. env.options: {{{env_cfg.id if env_cfg.id != MIX_ID else 'sql/sqlite-v1'}: "
                          f"{{difficulty: 2}}}}")
    if env_cfg.id == MIX_ID:
        env = make_mixed(env_cfg.mix, options)
        members = list(env.members.values())
    elif env_cfg.mix:
        raise ConfigError(f"env.mix is set but env.id is {env_cfg.id!r}: set env.id to mix to train on the mixture, "
                          f"or remove env.mix")
    else:
        env = make(env_cfg.id, **options.get(env_cfg.id, {}))
        members = [env]
    for member in members:
        if max_turns > 1 and isinstance(member, MultiTurn):
            member.max_turns = max_turns
    if getattr(env_cfg, "heldback", 0.0) > 0:
        from tempering.envs.heldback import HeldBack

        env = HeldBack(env, env_cfg.heldback)
    return env
