"""The shapes: which tables a database has and which reference which, as role names a domain
fills (domains_*.py) and build.py turns into tables.

    train and test:
      chain      top <- mid <- leaf, half the time under a root (when the domain has one): 2-3 joins deep
      star       a fact table referencing three dimension tables
      junction   left <-> right through a junction table keyed by the pair
      selfref    a table referencing itself (its `self` ref: a manager, a parent) and a child table
      wide       one table of 8 to 12 columns
      lines      party <- header <- line -> product (orders and order lines)
    unseen only:
      snowflake  fact -> dim -> outer, and fact -> other: a star whose dimension has a parent
      dual       a table referencing one table twice (`from` and `to` refs) and an agent table
      threaded   top <- node <- leaf, where node also references itself (replies to posts)
      bom        one table in a junction with itself (`left` and `right` refs: assembly, component)

A spec lists its tables parents first, so every foreign key points at rows already made.
"""

from __future__ import annotations

import random
from dataclasses import dataclass


@dataclass(frozen=True)
class Fk:
    target: str  # the role referenced
    ref: str = ""  # the domain's Ref for it ("self", "from"...), or "" for a plain link named after the target
    nullable: bool = False


@dataclass(frozen=True)
class Spec:
    role: str
    rows: tuple[int, int]
    fks: tuple[Fk, ...] = ()
    pair_key: bool = False  # a junction: its two foreign keys are its primary key
    coverage: float = 0.8  # the share of a parent's rows that children may point at (the rest have none)


def chain(rng: random.Random, roles) -> list[Spec]:
    rooted = "root" in roles and rng.random() < 0.5  # three tables or four
    specs = [Spec("top", (6, 10), (Fk("root"),) if rooted else ()),
             Spec("mid", (12, 22), (Fk("top"),)), Spec("leaf", (30, 60), (Fk("mid"),))]
    return ([Spec("root", (3, 5))] if rooted else []) + specs


def star(rng: random.Random, roles) -> list[Spec]:
    dims = [Spec(r, (5, 12)) for r in ("dim1", "dim2", "dim3")]
    return dims + [Spec("fact", (40, 80), tuple(Fk(r) for r in ("dim1", "dim2", "dim3")))]


def junction(rng: random.Random, roles) -> list[Spec]:
    return [Spec("left", (12, 24)), Spec("right", (6, 12)),
            Spec("link", (20, 50), (Fk("left"), Fk("right")), pair_key=True)]


def selfref(rng: random.Random, roles) -> list[Spec]:
    return [Spec("node", (14, 28), (Fk("node", "self", nullable=True),)), Spec("child", (25, 55), (Fk("node"),))]


def wide(rng: random.Random, roles) -> list[Spec]:
    return [Spec("row", (25, 45))]


def lines(rng: random.Random, roles) -> list[Spec]:
    return [Spec("party", (6, 12)), Spec("product", (8, 15)), Spec("header", (15, 30), (Fk("party"),)),
            Spec("line", (40, 90), (Fk("header"), Fk("product")), coverage=0.95)]


def snowflake(rng: random.Random, roles) -> list[Spec]:
    return [Spec("outer", (3, 6)), Spec("dim", (8, 15), (Fk("outer"),)), Spec("other", (5, 10)),
            Spec("fact", (40, 80), (Fk("dim"), Fk("other")))]


def dual(rng: random.Random, roles) -> list[Spec]:
    return [Spec("place", (6, 12)), Spec("agent", (5, 10)),
            Spec("move", (30, 60), (Fk("place", "from"), Fk("place", "to"), Fk("agent")))]


def threaded(rng: random.Random, roles) -> list[Spec]:
    return [Spec("top", (5, 10)), Spec("node", (20, 40), (Fk("top"), Fk("node", "self", nullable=True))),
            Spec("leaf", (30, 60), (Fk("node"),))]


def bom(rng: random.Random, roles) -> list[Spec]:
    return [Spec("node", (15, 25)), Spec("link", (20, 45), (Fk("node", "left"), Fk("node", "right")), pair_key=True)]


SHAPES = {f.__name__: f for f in (chain, star, junction, selfref, wide, lines, snowflake, dual, threaded, bom)}
TRAIN_SHAPES = ("chain", "star", "junction", "selfref", "wide", "lines")
UNSEEN_SHAPES = ("snowflake", "dual", "threaded", "bom")
