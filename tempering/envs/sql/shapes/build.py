"""A shape, a domain and a naming -> a filled SQLite database, its schema text, and the
records the question families read (`Database`, `Table`, `Column`, `Link`).

Rows are seeded and small (3 to 90 a table). What the families rely on is made true here:
labels are unique within a table; a category's values are drawn by skewed weights, so counts
differ; some parents have no children (`Spec.coverage`), so LEFT JOIN and anti-join questions
have an answer; a self-reference is a tree (roots have NULL, every other row points at an
earlier one) and a self-junction is acyclic (an assembly is listed after its components).
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass
from typing import Any

from tempering.envs.sql.schemas import connect_tables
from tempering.envs.sql.shapes.naming import Naming, table_code
from tempering.envs.sql.shapes.topology import SHAPES, Spec
from tempering.envs.sql.shapes.vocab import Concept, Domain, Entity, Ref, make_labels, make_value


@dataclass(frozen=True)
class Column:
    name: str
    kind: str  # "key", "fk", or a Concept kind
    said: str  # how questions name it in this database
    concept: Concept | None = None
    target: str | None = None  # fk: the referenced table
    nullable: bool = False
    ref: str = ""  # fk: the domain Ref it stands for ("self", "from"...), "" for a plain link


@dataclass(frozen=True)
class Table:
    name: str
    role: str
    entity: Entity
    columns: tuple[Column, ...]
    rows: tuple[tuple, ...]
    ddl: str
    spelling: str  # the entity's table spelling it was named from (plain foreign keys to it reuse it)

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    def values(self, name: str) -> list[Any]:
        i = [c.name for c in self.columns].index(name)
        return [row[i] for row in self.rows]

    def of(self, *kinds: str, nullable: bool | None = None) -> list[Column]:
        return [c for c in self.columns if c.kind in kinds and (nullable is None or c.nullable == nullable)]

    @property
    def pk(self) -> Column | None:
        return next((c for c in self.columns if c.kind == "key"), None)

    @property
    def label(self) -> Column | None:
        return next((c for c in self.columns if c.kind == "label"), None)

    @property
    def noun(self) -> str:
        return self.entity.noun

    @property
    def plural(self) -> str:
        return self.entity.plural


@dataclass(frozen=True)
class Link:
    """`child.fk` references `parent`'s primary key."""

    child: Table
    fk: Column
    parent: Table

    @property
    def self_ref(self) -> bool:
        return self.child is self.parent


@dataclass(frozen=True)
class Database:
    domain: Domain
    naming: Naming
    tables: tuple[Table, ...]

    def table(self, name: str) -> Table:
        return next(t for t in self.tables if t.name == name)

    def links(self) -> list[Link]:
        return [Link(t, c, self.table(c.target)) for t in self.tables for c in t.of("fk")]

    def connect(self) -> sqlite3.Connection:
        return connect_tables(self.tables)

    def describe(self, samples: int = 3) -> str:
        """The schema as written and the first `samples` rows of each table (sql/sqlite-v1's layout)."""
        ddl = "\n".join(t.ddl + ";" for t in self.tables)
        shown = []
        for t in self.tables:
            lines = [f"{t.name} ({len(t.rows)} rows)", " | ".join(c.name for c in t.columns)]
            lines += [" | ".join("NULL" if v is None else str(v) for v in row) for row in t.rows[:samples]]
            shown.append("\n".join(lines))
        return (f"Schema:\n```sql\n{ddl}\n```\n\nSample rows (the first {samples} of each table):\n"
                + "\n\n".join(shown))


def build(rng: random.Random, domain: Domain, naming: Naming) -> Database:
    """A database of `domain`'s shape, spelled by `naming`."""
    made: dict[str, Table] = {}
    codes: set[str] = set()
    for spec in SHAPES[domain.shape](rng, domain.roles):
        made[spec.role] = _table(rng, spec, domain, naming, made, codes)
    return Database(domain, naming, tuple(made.values()))


def _unique(name: str, taken: set[str]) -> str:
    base, n = name, 2
    while name.lower() in taken:
        name, n = f"{base}{n}", n + 1
    taken.add(name.lower())
    return name


def _columns(rng, spec: Spec, domain: Domain, naming: Naming, made: dict, spelling: str, code: str, name: str):
    """The table's columns, key first, then its name column, then the rest in a drawn order."""
    entity, taken = domain.roles[spec.role], set()
    head, rest = [], []
    if not spec.pair_key:
        head.append(Column(_unique(naming.pk(spelling, code), taken), "key", f"{entity.noun} number"))
    for fk in spec.fks:
        target = made[fk.target] if fk.target in made else None  # None: the table itself
        r = domain.refs.get(fk.ref) or Ref((target.noun,), (target.spelling,))
        rest.append(Column(_unique(naming.fk(rng.choice(r.spellings), code), taken), "fk", rng.choice(r.words),
                           target=target.name if target else name, nullable=fk.nullable, ref=fk.ref))
    if entity.label is not None:
        c = entity.label
        head.append(Column(_unique(naming.column(rng.choice(c.spellings), "label", False, code), taken), "label",
                           rng.choice(c.words), c))
    for c in entity.attrs:
        rest.append(Column(_unique(naming.column(rng.choice(c.spellings), c.kind, c.real, code), taken), c.kind,
                           rng.choice(c.words), c, nullable=c.nullable > 0))
    if rng.random() < 0.5:
        rng.shuffle(rest)
    return head + rest


def _table(rng, spec: Spec, domain: Domain, naming: Naming, made: dict, codes: set) -> Table:
    entity = domain.roles[spec.role]
    spelling = rng.choice(entity.tables)
    name = naming.table(spelling)
    while any(t.name.lower() == name.lower() for t in made.values()):
        name += "2"
    code = table_code(spelling, codes)
    columns = _columns(rng, spec, domain, naming, made, spelling, code, name)
    rows = _rows(rng, spec, entity, columns, made)
    return Table(name, spec.role, entity, tuple(columns), tuple(rows), _ddl(naming, name, columns, made, spec),
                 spelling)


def _ddl(naming: Naming, name: str, columns: list[Column], made: dict, spec: Spec) -> str:
    def pk_of(target: str) -> str:
        t = next((t for t in made.values() if t.name == target), None)
        return t.pk.name if t else next(c.name for c in columns if c.kind == "key")

    defs, tail = [], []
    for c in columns:
        real = c.concept.real if c.concept else False
        d = f"{c.name} {naming.type('key' if c.kind in ('key', 'fk') else c.kind, real)}"
        d += " PRIMARY KEY" if c.kind == "key" else "" if c.nullable else " NOT NULL"
        if c.kind == "fk":
            clause = f"REFERENCES {c.target}({pk_of(c.target)})"
            if naming.fk_at_end:
                tail.append(f"FOREIGN KEY ({c.name}) {clause}")
            else:
                d += " " + clause
        defs.append(d)
    if spec.pair_key:
        tail.insert(0, f"PRIMARY KEY ({', '.join(c.name for c in columns if c.kind == 'fk')})")
    parts = defs + tail
    body = ", ".join(parts) if naming.one_line else "\n  " + ",\n  ".join(parts) + "\n"
    return f"CREATE TABLE {name} ({body})"


def _keys(t: Table) -> list[int]:
    return t.values(t.pk.name)


def _pick_parent(rng, keys: list[int], coverage: float):
    """A drawing of parent keys: a `coverage` share of them, each with its own weight."""
    chosen = rng.sample(keys, max(1, round(len(keys) * coverage)))
    weights = [rng.uniform(0.3, 1.0) ** 2 for _ in chosen]
    return lambda: rng.choices(chosen, weights)[0]


def _rows(rng, spec: Spec, entity: Entity, columns: list[Column], made: dict) -> list[tuple]:
    n = rng.randint(*spec.rows)
    labels = make_labels(rng, entity, n) if entity.label is not None else []
    n = len(labels) if labels else n
    first = rng.choice((1, 1, 1, 11, 101, 1001))
    if spec.pair_key:
        return _pairs(rng, spec, columns, made, n, entity)
    draws = {}
    for c in columns:
        if c.kind == "fk" and c.target in (t.name for t in made.values()):
            parent = next(t for t in made.values() if t.name == c.target)
            draws[c.name] = _pick_parent(rng, _keys(parent), spec.coverage)
        elif c.kind == "cat":
            values = rng.sample(c.concept.values, min(len(c.concept.values), rng.randint(3, 6)))
            weights = [rng.uniform(0.2, 1.0) ** 2 for _ in values]
            draws[c.name] = lambda v=values, w=weights: rng.choices(v, w)[0]
    rows: list[dict] = []
    for i in range(n):
        row: dict[str, Any] = {}
        for c in columns:
            if c.kind == "key":
                row[c.name] = first + i
            elif c.kind == "label":
                row[c.name] = labels[i]
            elif c.kind == "fk" and c.name not in draws:  # the table itself: a tree over earlier rows
                row[c.name] = None if i < max(1, n // 8) or rng.random() < 0.1 else first + rng.randint(0, i // 2)
            elif c.kind == "fk":
                row[c.name] = draws[c.name]()
            elif c.kind == "cat":
                row[c.name] = None if c.nullable and rng.random() < c.concept.nullable else draws[c.name]()
            else:
                row[c.name] = make_value(rng, c.concept, labels[i] if labels else "")
        rows.append(row)
    _consistent(rng, columns, rows, first)
    return [tuple(r[c.name] for c in columns) for r in rows]


def _consistent(rng, columns: list[Column], rows: list[dict], first: int) -> None:
    """A reply sits in its parent's thread; a move's two ends differ."""
    own = [c for c in columns if c.kind == "fk" and c.ref == "self"]
    others = [c for c in columns if c.kind == "fk" and c.ref != "self"]
    for r in rows:
        for c in own:
            if r[c.name] is not None:
                parent = rows[r[c.name] - first]
                for o in others:
                    r[o.name] = parent[o.name]
    ends = [c for c in columns if c.ref in ("from", "to")]
    if len(ends) == 2:
        keys = sorted({r[ends[0].name] for r in rows} | {r[ends[1].name] for r in rows})
        for r in rows:
            while r[ends[0].name] == r[ends[1].name]:
                r[ends[1].name] = rng.choice(keys)


def _pairs(rng, spec: Spec, columns: list[Column], made: dict, n: int, entity: Entity) -> list[tuple]:
    """A junction's rows: distinct (left, right) pairs; for a table joined to itself, only
    pairs whose left key is the larger (so the relation has no cycles)."""
    a, b = (next(t for t in made.values() if t.name == c.target) for c in columns if c.kind == "fk")
    left = rng.sample(_keys(a), max(2, round(len(a.rows) * spec.coverage)))
    pairs = sorted({(x, y) for x in left for y in _keys(b) if a is not b or x > y})
    weights = {x: rng.uniform(0.2, 1.0) ** 2 for x in left}
    chosen: set = set()
    while len(chosen) < min(n, len(pairs)):
        chosen.add(rng.choices(pairs, [weights[p[0]] for p in pairs])[0])
    rows = []
    fks = [c for c in columns if c.kind == "fk"]
    drawn = sorted(chosen)
    rng.shuffle(drawn)  # rows in no telling order, as a junction filled over time is
    for pair in drawn:
        row = dict(zip((c.name for c in fks), pair))
        for c in columns:
            if c.kind not in ("fk", "key"):
                row[c.name] = make_value(rng, c.concept)
        rows.append(tuple(row[c.name] for c in columns))
    return rows
