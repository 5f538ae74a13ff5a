"""What a question family returns (`Posed`) and the few helpers every family uses.

A family is `(rng, db) -> Posed | None`: it picks what to ask about from the database's
records (build.py), never from a fixed table layout, so one family poses on every shape that
has what it needs, and returns None when the drawn database can't pose it well. Each words
its question three ways (a question, an imperative, a terse request), drawn by the rng.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from tempering.envs.sql.shapes.build import Column, Database, Table

T = TypeVar("T")


@dataclass(frozen=True)
class Posed:
    """A question, its reference query, a plausible wrong query, whether row order counts,
    and the columns the question names in words (`mentions`: the test checks the renamed ones
    never appear spelled as the schema spells them)."""

    text: str
    query: str
    broken: str
    ordered: bool = False
    mentions: tuple[Column, ...] = ()


Family = Callable[[random.Random, Database], "Posed | None"]


def say(rng: random.Random, *options: str) -> str:
    return rng.choice(options)


def pick(rng: random.Random, items: Sequence[T]) -> T | None:
    return rng.choice(list(items)) if items else None


def value(v) -> str:
    """A value as SQL: a quoted string (quotes doubled), else the number."""
    return "'" + v.replace("'", "''") + "'" if isinstance(v, str) else repr(v)


def shown(v) -> str:
    """A value as the question writes it: strings in single quotes."""
    return f"'{v}'" if isinstance(v, str) else str(v)


def tables(db: Database, *kinds: str, label: bool = False) -> list[Table]:
    """The tables with a column of each of `kinds` (and a name column, with `label`)."""
    return [t for t in db.tables if all(t.of(k) for k in kinds) and (not label or t.label is not None)]


def distinct(values) -> list:
    """The non-NULL values, each once, sorted."""
    return sorted({v for v in values if v is not None})


def an(noun: str) -> str:
    """ "a branch", "an account"."""
    return ("an " if noun[:1].lower() in "aeiou" else "a ") + noun


def ties(label: Column) -> str:
    return f"break ties by {label.said} (A to Z)"


def title(text: str) -> str:
    return text[:1].upper() + text[1:]
