"""The family record of `code/docstring-v1` and the input drawers its families share.

A family is one function to write, stated compactly: names it may take, argument names and
types, several phrasings of what it does, a reference body and an input drawer. Phrasings
and bodies are format strings: `{a}`, `{b}`, `{c}` stand for the argument names the task
draws, `{fn}` for the function's name, anything else for the family's parameters (each
integer parameter `k` also comes spelled out as `{k_w}`, "three").
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Callable

RESERVED = ("a", "b", "c", "fn")
"""Format fields the renderer fills itself: a family's parameters must not use them."""


def _no_params(rng: random.Random) -> dict:
    return {}


@dataclass(frozen=True)
class Family:
    name: str
    fns: tuple[str, ...]
    """Function names, snake_case; the task's naming style may write one in camelCase."""
    args: tuple[tuple[tuple[str, ...], str], ...]
    """Each argument: the names it may take, and its type as the typing module spells it."""
    returns: str
    docs: tuple[str, ...]
    """Phrasings of what the function does (format strings, see the module's docstring)."""
    body: str
    """The reference body, each line after the first indented 4 spaces."""
    inputs: Callable[[random.Random, dict], list]
    """One argument list, given the rng and the task's parameters."""
    params: Callable[[random.Random], dict] = _no_params
    kind: str = ""
    """strings, counting, lists, numbers, parsing, ordering or dicts (set by `kinds`)."""


def fam(name: str, fns: str, args: tuple[str, ...], returns: str, docs: tuple[str, ...], body: str,
        inputs: Callable[[random.Random, dict], list], params: Callable[[random.Random], dict] = _no_params) -> Family:
    """A family from its compact spelling: `fns` space-separated, each of `args` as
    "name1 name2 ...: Type"."""
    parsed = []
    for spec in args:
        names, kind = spec.split(":", 1)
        parsed.append((tuple(names.split()), kind.strip()))
    return Family(name, tuple(fns.split()), tuple(parsed), returns, docs, body, inputs, params)


def kinds(**groups: tuple[Family, ...]) -> tuple[Family, ...]:
    return tuple(replace(f, kind=kind) for kind, families in groups.items() for f in families)


# Input drawers. Small alphabets and ranges so that repeats, ties and edge cases turn up.

def word(r: random.Random, lo: int = 1, hi: int = 7, alphabet: str = "abcdefghilmnoprstu") -> str:
    return "".join(r.choice(alphabet) for _ in range(r.randint(lo, hi)))


def words(r: random.Random, lo: int = 0, hi: int = 6, alphabet: str = "abcdefghilmnoprstu") -> list[str]:
    return [word(r, 1, 7, alphabet) for _ in range(r.randint(lo, hi))]


def sentence(r: random.Random, lo: int = 0, hi: int = 6) -> str:
    return " ".join(words(r, lo, hi))


def mixed_case(r: random.Random, text: str) -> str:
    return "".join(ch.upper() if r.random() < 0.3 else ch for ch in text)


def ints(r: random.Random, lo: int = 0, hi: int = 8, a: int = -9, b: int = 9) -> list[int]:
    return [r.randint(a, b) for _ in range(r.randint(lo, hi))]


ORDINALS = ("zeroth", "first", "second", "third", "fourth", "fifth")


def every_kth(r: random.Random) -> dict:
    """Parameters of an every-k-th-element family: k, 2k, and k as an ordinal."""
    k = r.randint(2, 4)
    return {"k": k, "k2": 2 * k, "kth": ORDINALS[k]}


NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
                "eleven", "twelve")
