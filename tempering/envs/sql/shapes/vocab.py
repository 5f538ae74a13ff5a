"""What a column means, apart from how it is spelled: the records the domain files fill in.

A `Concept` is one attribute: its kind (a category, a number, a date...), the words a question
uses for it ("number of units"), and the spellings a schema gives it ("qty", "unit count").
Where no spelling is made of the question's words (`renamed`), the model has to map meaning to
a column rather than copy a word from the question: the issue this env exists for.

An `Entity` is a table's subject (its nouns, table spellings, name column and attributes); a
`Ref` is what a foreign key means when it is more than "the parent" (a manager, an origin, a
prerequisite); a `Domain` fills one shape's roles with entities (topology.py names the roles).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

KINDS = ("label", "cat", "num", "date", "flag", "text")


@dataclass(frozen=True)
class Concept:
    """One attribute. `words` and `spellings` are "|"-separated in the domain files."""

    kind: str  # one of KINDS
    words: tuple[str, ...]  # how a question names it: noun phrases ("opening date"); flags: adjectives ("active")
    spellings: tuple[str, ...]  # column names as space-separated words, before the naming style
    values: Any = None  # cat: the values; num: (lo, hi), floats for REAL; date: (first year, last year); text: format
    nullable: float = 0.0  # the share of rows left NULL
    role: str | None = None  # "qty" or "price": the pair a line total multiplies
    additive: bool = True  # numbers: a total means something (hours, amounts), else only an average (ratings)

    @property
    def renamed(self) -> bool:
        """No spelling is made only of the question's words: the column must be found by meaning."""
        said = {w for phrase in self.words for w in phrase.split()}
        return all(not set(s.split()) <= said for s in self.spellings)

    @property
    def real(self) -> bool:
        return self.kind == "num" and isinstance(self.values[0], float)


@dataclass(frozen=True)
class Entity:
    """A table's subject: `noun`/`plural` are the question's words, `tables` the table spellings
    (singular, space-separated words), `label` its name column (None: rows known by number)."""

    noun: str
    plural: str
    tables: tuple[str, ...]
    label: Concept | None
    names: Any  # label values: PEOPLE, or (first words, second words) combined, or (words, ()) alone
    attrs: tuple[Concept, ...] = ()


@dataclass(frozen=True)
class Ref:
    """What a foreign key means: `words` as a question says it ("manager"), `spellings` before
    the id suffix ("manager", "reports to", "boss"), `verb` an optional way to ask ("report to")."""

    words: tuple[str, ...]
    spellings: tuple[str, ...]
    verb: str | None = None


@dataclass(frozen=True)
class Domain:
    """One vocabulary for one shape: `roles` maps the shape's roles to entities; `refs` names
    the foreign keys that are not plain "belongs to" links; `verbs` words a junction both ways
    ("play in", "include": "Which musicians play in more than 2 bands?")."""

    key: str
    about: str  # "a city's bike couriers": how the prompt introduces the database
    shape: str
    roles: dict[str, Entity]
    refs: dict[str, Ref] = field(default_factory=dict)
    verbs: tuple[str, str] = ("", "")


def _split(text: str) -> tuple[str, ...]:
    return tuple(w.strip() for w in text.split("|"))


def label(words: str, spellings: str) -> Concept:
    return Concept("label", _split(words), _split(spellings))


def cat(words: str, spellings: str, values: str, nullable: float = 0.0) -> Concept:
    return Concept("cat", _split(words), _split(spellings), _split(values), nullable)


def num(words: str, spellings: str, lo, hi, nullable: float = 0.0, role: str | None = None,
        additive: bool = True) -> Concept:
    return Concept("num", _split(words), _split(spellings), (lo, hi), nullable, role, additive and role != "price")


def day(words: str, spellings: str, first: int = 2019, last: int = 2024, nullable: float = 0.0) -> Concept:
    return Concept("date", _split(words), _split(spellings), (first, last), nullable)


def flag(words: str, spellings: str, p: float = 0.5) -> Concept:
    return Concept("flag", _split(words), _split(spellings), p)


def text(words: str, spellings: str, fmt: str, nullable: float = 0.3) -> Concept:
    return Concept("text", _split(words), _split(spellings), fmt, nullable)


def ref(words: str, spellings: str, verb: str | None = None) -> Ref:
    return Ref(_split(words), _split(spellings), verb)


def ent(noun: str, plural: str, tables: str, name: Concept | None, names: Any, *attrs: Concept) -> Entity:
    return Entity(noun, plural, _split(tables), name, names, attrs)


def parts(first: str, second: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Label values made of one word of each list: "Amber|Cobalt", "Ridge|Hollow"."""
    return _split(first), _split(second)


PEOPLE = "people"
FIRST = _split("Adele|Bruno|Carmen|Dmitri|Elif|Fabian|Greta|Hamid|Ines|Jasper|Kenji|Leonie|Marek|Nadia|Oskar|"
               "Paloma|Rafael|Saanvi|Teodor|Ulla|Viktor|Wanda|Ximena|Yusuf|Zelda|Anouk|Bastian|Corin|Dalia|Emeka")
LAST = _split("Achterberg|Bianchi|Castell|Dubois|Eriksen|Fontaine|Gallo|Horvat|Ivanova|Jansen|Kaur|Lindgren|"
              "Mbeki|Nakamura|Oduya|Petrov|Quintero|Romano|Sato|Thorne|Ueda|Varga|Weiss|Yilmaz|Zeller")


def make_labels(rng: random.Random, entity: Entity, n: int) -> list[str]:
    """n distinct label values for `entity` (as many as it has, when fewer)."""
    first, second = (FIRST, LAST) if entity.names == PEOPLE else entity.names
    pool = [f"{a} {b}" for a in first for b in second] if second else list(first)
    return rng.sample(pool, min(n, len(pool)))


def make_value(rng: random.Random, c: Concept, label_value: str = ""):
    """One value of concept `c`; NULL at its `nullable` rate. Categories are drawn by weights
    the caller skews (see build.py), so here they are uniform."""
    if c.nullable and rng.random() < c.nullable:
        return None
    if c.kind == "num":
        lo, hi = c.values
        return round(rng.uniform(lo, hi), 2) if isinstance(lo, float) else rng.randint(lo, hi)
    if c.kind == "date":
        start, end = date(c.values[0], 1, 1), date(c.values[1], 12, 31)
        return (start + timedelta(days=rng.randint(0, (end - start).days))).isoformat()
    if c.kind == "flag":
        return int(rng.random() < c.values)
    if c.kind == "cat":
        return rng.choice(c.values)
    slug = "".join(ch for ch in label_value.lower().replace(" ", ".") if ch.isalnum() or ch == ".") or "x"
    return c.values.format(slug=slug, n=rng.randint(1000, 9999), nn=rng.randint(10, 99))
