"""Question families that group or rank one table: GROUP BY, HAVING, top-k and per-month counts.

Ordered answers say their order and their tie-break, so exactly one row order is right.
"""

from __future__ import annotations

import random
from collections import Counter

from tempering.envs.sql.shapes.ask import Posed, distinct, pick, say, tables, ties, title
from tempering.envs.sql.shapes.build import Database


def per_value(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, [t for t in db.tables if t.of("cat", nullable=False)])
    if t is None:
        return None
    c = rng.choice(t.of("cat", nullable=False))
    # the plausible slip: counting a column that has NULLs (or distinct values) instead of rows
    other = t.of("num", "date", "text", "cat", nullable=True) or t.of("num")
    if not other:
        return None
    o = rng.choice(other)
    slip = f"COUNT({o.name})" if o.nullable else f"COUNT(DISTINCT {o.name})"
    text = say(rng, f"For each {c.said}, how many {t.plural} are there? Return the {c.said} and the count.",
               f"Count the {t.plural} per {c.said}: return each {c.said} with its count.",
               f"{title(t.plural)} by {c.said}: {c.said} and count.")
    query = f"SELECT {c.name}, {{}} FROM {t.name} GROUP BY {c.name};"
    return Posed(text, query.format("COUNT(*)"), query.format(slip), mentions=(c,))


def having_count(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "cat"))
    if t is None:
        return None
    c = rng.choice(t.of("cat"))
    counts = Counter(v for v in t.values(c.name) if v is not None)
    # k is some value's count (so `>` differs), above the smallest (so a value is left out)
    ks = sorted({n for n in counts.values() if min(counts.values()) < n})
    if not ks:
        return None
    k = rng.choice(ks)
    text = say(rng, f"Which {c.said} values occur in at least {k} {t.plural}?",
               f"List each {c.said} shared by {k} or more {t.plural}.",
               f"{title(c.said)} values with >= {k} {t.plural}.")
    query = f"SELECT {c.name} FROM {t.name} WHERE {c.name} IS NOT NULL GROUP BY {c.name} HAVING COUNT(*) {{}} {k};"
    return Posed(text, query.format(">="), query.format(">"), mentions=(c,))


def top_k(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "num", label=True))
    if t is None:
        return None
    n, name = rng.choice(t.of("num")), t.label
    k = rng.choice((3, 4, 5))
    if len(t.rows) <= k + 2:
        return None
    high = rng.random() < 0.7
    most, first, order = ("highest", "highest first", "DESC") if high else ("lowest", "lowest first", "ASC")
    answer = f"the {name.said} and the {n.said}, {first}; {ties(name)}"
    text = say(rng, f"Which {k} {t.plural} have the {most} {n.said}? Return {answer}.",
               f"List the {k} {t.plural} with the {most} {n.said}: {answer}.",
               f"Top {k} {t.plural} by {n.said} ({most} first): {name.said}, {n.said}; {ties(name)}.")
    query = (f"SELECT {name.name}, {n.name}\nFROM {t.name}\nWHERE {n.name} IS NOT NULL\n"
             f"ORDER BY {n.name} {{}}, {name.name}\nLIMIT {k};")
    return Posed(text, query.format(order), query.format("ASC" if high else "DESC"), True, (n, name))


def group_avg(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, [t for t in db.tables if t.of("cat", nullable=False) and t.of("num")])
    if t is None:
        return None
    c, n = rng.choice(t.of("cat", nullable=False)), rng.choice(t.of("num"))
    answer = (f"Return the {c.said} and the average, highest average first; break ties by {c.said} (A to Z).")
    text = say(rng, f"For each {c.said}, what is the average {n.said} of the {t.plural}, rounded to 2 decimal "
               f"places? {answer}", f"Compute the average {n.said} of the {t.plural} per {c.said}, rounded to 2 "
               f"decimal places. {answer}", f"Average {n.said} (2 decimals) per {c.said}. {answer}")
    query = (f"SELECT {c.name}, ROUND(AVG({n.name}), 2) AS average\nFROM {t.name}\nGROUP BY {c.name}\n"
             f"ORDER BY average {{}}, {c.name};")
    return Posed(text, query.format("DESC"), query.format("ASC"), True, (c, n))


def monthly(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "date"))
    if t is None:
        return None
    d = rng.choice(t.of("date"))
    months = Counter(v[:7] for v in t.values(d.name) if v)
    years = [y for y in distinct(m[:4] for m in months) if sum(m.startswith(y) for m in months) >= 3]
    if not years:
        return None
    year = rng.choice(years)
    answer = (f"Return the month as 'YYYY-MM' and the count, in chronological order, leaving out months with no "
              f"{t.plural}.")
    text = say(rng, f"For each month of {year}, how many {t.plural} have their {d.said} in that month? {answer}",
               f"Count the {t.plural} in each month of {year}, by {d.said}. {answer}",
               f"Monthly count of {t.plural} by {d.said} for {year}. {answer}")
    query = (f"SELECT strftime('%Y-%m', {d.name}) AS month, COUNT(*)\nFROM {t.name}\n"
             f"WHERE strftime('%Y', {d.name}) = '{year}'\nGROUP BY month\nORDER BY month{{}};")
    return Posed(text, query.format(""), query.format(" DESC"), True, (d,))
