"""From YAML and `--set section.key=value` to a typed, resolved Config, and back to a dict."""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from pathlib import Path
from typing import Any

import yaml

from tempering.config.recipes import resolve
from tempering.config.schema import Config
from tempering.errors import ConfigError


def field_docs(cls: type) -> dict[str, str]:
    """The one-line docstring under each field of a config dataclass."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body
    docs = {}
    for node, nxt in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(nxt, ast.Expr) and isinstance(nxt.value, ast.Constant):
            docs[node.target.id] = str(nxt.value.value).strip()
    return docs


def valid_keys(cls: type = Config, prefix: str = "") -> list[str]:
    """Every dotted key the config accepts, e.g. `rollout.temperature`."""
    keys = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[f.name]):
            keys += valid_keys(hints[f.name], f"{prefix}{f.name}.")
        else:
            keys.append(prefix + f.name)
    return keys


def _coerce(value: Any, hint: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):  # X | None: unset means "the algorithm's default"
        if value is None:
            return None
        (hint,) = [a for a in typing.get_args(hint) if a is not type(None)]
        origin = typing.get_origin(hint)
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"config key {key!r} takes a mapping, e.g. {{math/arith-v1: 1.0, code/synth-v1: 1.0}}, "
                              f"got {value!r}")
        k_hint, v_hint = typing.get_args(hint)
        return {_coerce(k, k_hint, key): _coerce(v, v_hint, f"{key}.{k}") for k, v in value.items()}
    if origin is tuple and len(typing.get_args(hint)) == 2 and typing.get_args(hint)[1] is Ellipsis:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key {key!r} takes a list, got {value!r}")
        return tuple(_coerce(v, typing.get_args(hint)[0], key) for v in value)
    if origin is tuple:
        if not isinstance(value, (list, tuple)):
            raise ConfigError(f"config key {key!r} takes a list, got {value!r}")
        return tuple(_coerce(v, a, key) for v, a in zip(value, typing.get_args(hint)))
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"config key {key!r} takes true or false, got {value!r}")
        return value
    if hint is float and isinstance(value, (int, str)) and not isinstance(value, bool):
        try:
            return float(value)  # YAML reads 1e-4 (no dot) as a string
        except ValueError:
            pass
    if hint in (int, float, str) and (isinstance(value, bool) or not isinstance(value, hint)):
        raise ConfigError(f"config key {key!r} takes a {hint.__name__}, got {value!r}")
    return value


def _build(cls: type, data: dict, prefix: str, root: type = Config) -> Any:
    if not isinstance(data, dict):
        raise ConfigError(f"config section {prefix.rstrip('.') or 'top level'} must be a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        key, keys = f"{prefix}{unknown[0]}", valid_keys(root)
        near = [prefix + k for k in difflib.get_close_matches(unknown[0], sorted(names), n=2, cutoff=0.7)]
        hint = f" Did you mean {' or '.join(near)}?" if near else ""
        raise ConfigError(f"unknown config key '{key}'.{hint} Valid keys: {', '.join(keys)}")
    kwargs = {}
    for name, value in data.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            kwargs[name] = _build(hint, value or {}, f"{prefix}{name}.", root)
        else:
            kwargs[name] = _coerce(value, hint, prefix + name)
    return cls(**kwargs)


def build(cls: type, data: dict) -> Any:
    """A config dataclass of any schema (`cls`) from a nested dict, with the same checks and
    errors as a run's config (unknown keys name the valid ones; values are type-checked)."""
    return _build(cls, data, "", cls)


def from_dict(data: dict, overrides: list[str] | None = None) -> Config:
    """A resolved run Config from a nested dict (as read from YAML) and `--set` overrides."""
    return resolve(_build(Config, _merge(data, parse_set(overrides or [])), ""))


def scalar(raw: str):
    """A command-line value as YAML reads it (3 -> int, [a, b] -> list, true -> bool), or the
    text itself where it is not valid YAML; empty stays the empty string."""
    if not raw:
        return ""
    try:
        return yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw


class _Whole(dict):
    """A mapping given whole as a --set value (`--set eval.watch={}`): it replaces the file's
    mapping instead of being merged into it, or `{}` could never clear anything."""


def parse_set(items: list[str]) -> dict:
    """Turn ["a.b=1", "c=x"] into a nested dict; values are parsed as YAML scalars, and a
    mapping value (`--set eval.watch={}`) replaces what the file has there."""
    tree: dict = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep or not key or any(not part for part in key.split(".")):
            raise ConfigError(f"malformed --set {item!r}: write --set section.key=value, e.g. --set rollout.temperature=0.7")
        value = scalar(raw)
        node = tree
        *parents, leaf = key.split(".")
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"--set {item!r} conflicts with another --set for {part!r}")
        node[leaf] = _Whole(value) if isinstance(value, dict) else value
    return tree


def merge(base: dict, over: dict) -> dict:
    """`over` laid on `base`, nested mappings merged key by key."""
    return _merge(base, over)


def _merge(base: dict, over: dict) -> dict:
    out = dict(base)
    for k, v in over.items():
        merges = isinstance(v, dict) and not isinstance(v, _Whole) and isinstance(out.get(k), dict)
        out[k] = _merge(out[k], v) if merges else dict(v) if isinstance(v, _Whole) else v
    return out


def read_yaml(path: str | Path, what: str, example: str) -> dict:
    """A YAML mapping from `path`, with one clear error when it is missing or malformed."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{what} {str(path)!r} not found: pass a YAML file such as {example}")
    try:
        return yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise ConfigError(f"{what} {str(path)!r} is not valid YAML: {e}") from None


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> Config:
    """Read a YAML config (or start from defaults) and apply `--set` overrides."""
    data = read_yaml(path, "config file", "configs/tiny-cpu.yaml") if path is not None else {}
    return resolve(_build(Config, _merge(data, parse_set(overrides or [])), ""))


def to_dict(config: Any) -> dict:
    """Plain nested dict (tuples as lists) for writing config.yaml."""
    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    return plain(dataclasses.asdict(config))


def replace(config: Config, **sections: dict) -> Config:
    """Copy of config with some fields of some sections changed: replace(c, train={"steps": 4})."""
    return dataclasses.replace(
        config, **{name: dataclasses.replace(getattr(config, name), **kw) for name, kw in sections.items()}
    )
