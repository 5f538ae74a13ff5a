"""Question families on self-references (a table joined to itself) and many-to-many
junctions (two tables, or one table twice, through a table keyed by the pair).

Self-joins alias the one table twice (`c` the row, `m` the row it references); the broken
queries read the reference backwards or one level short. Junction questions are worded with
the domain's verbs both ways ("Which musicians play in more than 2 bands?", "Which bands
include ..."); for a table in a junction with itself the object is named by the junction's
refs ("Which parts directly use the component ...").
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from tempering.envs.sql.shapes.ask import Posed, an, pick, say, shown, ties, title, value
from tempering.envs.sql.shapes.build import Column, Database, Table
from tempering.envs.sql.shapes.naming import plural


def _self(db: Database) -> list[tuple[Table, Column]]:
    return [(link.child, link.fk) for link in db.links() if link.self_ref and link.child.label is not None]


def _children(t: Table, fk: Column) -> Counter:
    return Counter(v for v in t.values(fk.name) if v is not None)


def _name_of(t: Table, key) -> str:
    return dict(zip(t.values(t.pk.name), t.values(t.label.name)))[key]


def self_reports(rng: random.Random, db: Database) -> Posed | None:
    found = pick(rng, _self(db))
    if found is None:
        return None
    t, fk = found
    name = t.label
    x = _name_of(t, rng.choice(sorted(_children(t, fk))))
    options = [f"Which {t.plural} have {shown(x)} as their {fk.said}? Give their {name.said}.",
               f"List the {name.said} of every {t.noun} whose {fk.said} is {shown(x)}.",
               f"{title(t.plural)} with {fk.said} {shown(x)}: {name.said}."]
    verb = db.domain.refs["self"].verb
    if verb:
        options.append(f"Which {t.plural} {verb} {shown(x)} directly? Give their {name.said}.")
    head = f"FROM {t.name} c\nJOIN {t.name} m ON m.{t.pk.name} = c.{fk.name}\nWHERE "
    return Posed(rng.choice(options), f"SELECT c.{name.name}\n{head}m.{name.name} = {value(x)};",
                 f"SELECT m.{name.name}\n{head}c.{name.name} = {value(x)};", mentions=(name,))


def self_pair(rng: random.Random, db: Database) -> Posed | None:
    found = pick(rng, _self(db))
    if found is None:
        return None
    t, fk = found
    name = t.label
    text = say(rng, f"List every {t.noun} with its {fk.said}: the {t.noun}'s {name.said} and the {fk.said}'s "
               f"{name.said}, with NULL for {t.plural} that have no {fk.said}.",
               f"For each {t.noun}, return its {name.said} and its {fk.said}'s {name.said} (NULL where there is no "
               f"{fk.said}).", f"Every {t.noun} and its {fk.said} ({name.said} of both); NULL when none.")
    query = (f"SELECT c.{name.name}, m.{name.name}\nFROM {t.name} c\n{{}} {t.name} m ON m.{t.pk.name} = "
             f"c.{fk.name};")
    return Posed(text, query.format("LEFT JOIN"), query.format("JOIN"), mentions=(name,))


def self_most(rng: random.Random, db: Database) -> Posed | None:
    found = pick(rng, _self(db))
    if found is None:
        return None
    t, fk = found
    name, k = t.label, rng.choice((2, 3))
    if len(_children(t, fk)) <= k:
        return None
    answer = f"the {name.said} and that number, most first; {ties(name)}"
    text = say(rng, f"Which {k} {t.plural} are the {fk.said} of the most {t.plural}? Return {answer}.",
               f"Find the {k} {t.plural} that most {t.plural} have as their {fk.said}: {answer}.",
               f"Top {k} {t.plural} by how many {t.plural} have them as {fk.said}: {answer}.")
    query = (f"SELECT {{0}}.{name.name}, COUNT(*) AS n\nFROM {t.name} c\nJOIN {t.name} m ON m.{t.pk.name} = "
             f"c.{fk.name}\nGROUP BY {{0}}.{t.pk.name}\nORDER BY n DESC, {{0}}.{name.name}\nLIMIT {k};")
    return Posed(text, query.format("m"), query.format("c"), True, (name,))


def self_two_levels(rng: random.Random, db: Database) -> Posed | None:
    found = pick(rng, _self(db))
    if found is None:
        return None
    t, fk = found
    name = t.label
    parent = dict(zip(t.values(t.pk.name), t.values(fk.name)))
    grand = sorted({parent[p] for p in parent.values() if p is not None and parent[p] is not None})
    if not grand:
        return None
    x = _name_of(t, rng.choice(grand))
    text = say(rng, f"Which {t.plural} have {an(fk.said)} whose own {fk.said} is {shown(x)}? Give their {name.said}.",
               f"List the {name.said} of the {t.plural} two levels below {shown(x)}: their {fk.said}'s {fk.said} is "
               f"{shown(x)}.", f"{title(t.plural)} whose {fk.said}'s {fk.said} is {shown(x)}: {name.said}.")
    query = (f"SELECT c.{name.name}\nFROM {t.name} c\nJOIN {t.name} m ON m.{t.pk.name} = c.{fk.name}\n"
             f"JOIN {t.name} g ON g.{t.pk.name} = m.{fk.name}\nWHERE g.{name.name} = {value(x)};")
    broken = (f"SELECT c.{name.name}\nFROM {t.name} c\nJOIN {t.name} m ON m.{t.pk.name} = c.{fk.name}\n"
              f"WHERE m.{name.name} = {value(x)};")
    return Posed(text, query, broken, mentions=(name,))


@dataclass(frozen=True)
class Side:
    """One way to read a junction: rows of `subject` (joined on `key`) related by `verb` to
    rows of `obj` (through `other`), which the question calls `obj_noun`/`obj_plural`."""

    junction: Table
    subject: Table
    key: Column
    other: Column
    obj: Table
    verb: str
    obj_noun: str
    obj_plural: str


def _sides(db: Database) -> list[Side]:
    sides = []
    for j in db.tables:
        # the left side first, whatever the column order: the domain's verbs read left to right
        fks = sorted(j.of("fk"), key=lambda fk: fk.ref != "left" and db.table(fk.target).role != "left")
        if j.pk is not None or len(fks) != 2:
            continue
        a, b = (db.table(fk.target) for fk in fks)
        for (s, key), (o, other), verb in (((a, fks[0]), (b, fks[1]), db.domain.verbs[0]),
                                           ((b, fks[1]), (a, fks[0]), db.domain.verbs[1])):
            noun = other.said if a is b else o.noun  # one table twice: the ref names the object
            if s.label is not None and o.label is not None:
                sides.append(Side(j, s, key, other, o, verb, noun, plural(noun) if a is b else o.plural))
    return sides


def m2m_more(rng: random.Random, db: Database) -> Posed | None:
    side = pick(rng, _sides(db))
    if side is None:
        return None
    s = side.subject
    counts = Counter(side.junction.values(side.key.name))
    ks = sorted({n for n in counts.values() if n < max(counts.values())})
    if not ks:
        return None
    k = rng.choice(ks)  # some subject has exactly k: `>=` would list it
    text = say(rng, f"Which {s.plural} {side.verb} more than {k} {side.obj_plural}? Give their {s.label.said}.",
               f"List the {s.label.said} of the {s.plural} that {side.verb} more than {k} {side.obj_plural}.",
               f"{title(s.plural)} that {side.verb} over {k} {side.obj_plural}: {s.label.said}.")
    query = (f"SELECT s.{s.label.name}\nFROM {s.name} s\nJOIN {side.junction.name} j ON j.{side.key.name} = "
             f"s.{s.pk.name}\nGROUP BY s.{s.pk.name}\nHAVING COUNT(*) {{}} {k};")
    return Posed(text, query.format(">"), query.format(">="), mentions=(s.label,))


def m2m_with(rng: random.Random, db: Database) -> Posed | None:
    side = pick(rng, _sides(db))
    if side is None:
        return None
    s, o = side.subject, side.obj
    x = _name_of(o, rng.choice(sorted(set(side.junction.values(side.other.name)))))
    text = say(rng, f"Which {s.plural} {side.verb} the {side.obj_noun} {shown(x)}? Give their {s.label.said}.",
               f"List the {s.label.said} of the {s.plural} that {side.verb} the {side.obj_noun} {shown(x)}.",
               f"{title(s.plural)} that {side.verb} the {side.obj_noun} {shown(x)}: {s.label.said}.")
    query = (f"SELECT s.{s.label.name}\nFROM {s.name} s\nJOIN {side.junction.name} j ON j.{side.key.name} = "
             f"s.{s.pk.name}\nJOIN {o.name} o ON o.{o.pk.name} = j.{{}}\nWHERE o.{o.label.name} = {value(x)};")
    return Posed(text, query.format(side.other.name), query.format(side.key.name), mentions=(s.label, o.label))


def m2m_none(rng: random.Random, db: Database) -> Posed | None:
    side = pick(rng, _sides(db))
    if side is None:
        return None
    s = side.subject
    text = say(rng, f"Which {s.plural} {side.verb} no {side.obj_plural} at all? Give their {s.label.said}.",
               f"List the {s.label.said} of the {s.plural} that {side.verb} no {side.obj_plural}.",
               f"{title(s.plural)} that {side.verb} no {side.obj_plural}: {s.label.said}.")
    query = (f"SELECT s.{s.label.name}\nFROM {s.name} s\nWHERE s.{s.pk.name} NOT IN (SELECT j.{{}} FROM "
             f"{side.junction.name} j);")
    return Posed(text, query.format(side.key.name), query.format(side.other.name), mentions=(s.label,))
