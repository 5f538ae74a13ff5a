"""Question families on one table: counts, filters, NULLs, dates and single aggregates.

Each picks a table with the columns it needs from any shape (a wide table, a fact table, a
junction's payload...), so the same family meets many layouts. Thresholds and dates are
values stored in the table, so the broken query's off-by-one bound changes the answer.
"""

from __future__ import annotations

import random
from datetime import date, timedelta

from tempering.envs.sql.shapes.ask import Posed, an, distinct, pick, say, shown, tables, title, value
from tempering.envs.sql.shapes.build import Database

ATTRS = ("cat", "num", "date", "text", "flag")


def count_value(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "cat"))
    if t is None:
        return None
    c = rng.choice(t.of("cat"))
    v = pick(rng, distinct(t.values(c.name)))
    text = say(rng, f"How many {t.plural} have {c.said} {shown(v)}?", f"Count the {t.plural} whose {c.said} is "
               f"{shown(v)}.", f"Number of {t.plural} with {c.said} {shown(v)}.")
    query = f"SELECT COUNT(*) FROM {t.name} WHERE {c.name} = {value(v)};"
    return Posed(text, query, query.replace(" = ", " <> "), mentions=(c,))


def list_above(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "num", label=True))
    if t is None:
        return None
    c = rng.choice(t.of("num"))
    values = distinct(t.values(c.name))[::-1]
    if len(values) < 5:
        return None
    x = values[rng.randint(2, min(8, len(values) - 2))]  # a stored value: `>=` also lists its row
    name = t.label
    text = say(rng, f"Which {t.plural} have {an(c.said)} above {x}? Give their {name.said}.",
               f"List the {name.said} of every {t.noun} whose {c.said} is greater than {x}.",
               f"{title(t.plural)} with {c.said} over {x}: {name.said} only.")
    query = f"SELECT {name.name} FROM {t.name} WHERE {c.name} > {x};"
    return Posed(text, query, query.replace(" > ", " >= "), mentions=(c, name))


def missing(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, [t for t in db.tables if t.of(*ATTRS, nullable=True)])
    if t is None:
        return None
    c = rng.choice(t.of(*ATTRS, nullable=True))
    if rng.random() < 0.5:
        text = say(rng, f"How many {t.plural} have no {c.said} on record?",
                   f"Count the {t.plural} whose {c.said} is missing.", f"{title(t.plural)} without {an(c.said)}: how many?")
        return Posed(text, f"SELECT COUNT(*) FROM {t.name} WHERE {c.name} IS NULL;",
                     f"SELECT COUNT(*) FROM {t.name} WHERE {c.name} = NULL;", mentions=(c,))
    text = say(rng, f"How many {t.plural} have {an(c.said)} on record?", f"Count the {t.plural} whose {c.said} is "
               f"filled in.", f"Number of {t.plural} with a known {c.said}.")
    return Posed(text, f"SELECT COUNT({c.name}) FROM {t.name};", f"SELECT COUNT(*) FROM {t.name};", mentions=(c,))


def flag_count(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "flag"))
    if t is None:
        return None
    c = rng.choice(t.of("flag"))
    if rng.random() < 0.6:
        text = say(rng, f"How many {t.plural} are {c.said}?", f"Count the {t.plural} that are {c.said}.",
                   f"{title(t.plural)} that are {c.said}: how many?")
        return Posed(text, f"SELECT COUNT(*) FROM {t.name} WHERE {c.name} = 1;",
                     f"SELECT COUNT(*) FROM {t.name} WHERE {c.name} = 0;", mentions=(c,))
    text = say(rng, f"How many {t.plural} are not {c.said}?", f"Count the {t.plural} that are not {c.said}.",
               f"{title(t.plural)} that are not {c.said}: how many?")
    return Posed(text, f"SELECT COUNT(*) FROM {t.name} WHERE {c.name} = 0;",
                 f"SELECT COUNT(*) FROM {t.name} WHERE {c.name} IS NULL;", mentions=(c,))


def multi_filter(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "cat", "num", label=True))
    if t is None:
        return None
    c, n, name = rng.choice(t.of("cat")), rng.choice(t.of("num")), t.label
    v = rng.choice(distinct(t.values(c.name)))
    within = distinct(x for x, y in zip(t.values(n.name), t.values(c.name)) if y == v)
    if len(within) < 2:
        return None
    x = rng.choice(within[1:])  # stored and above the group's lowest, so some row of it is left out
    text = say(rng, f"Which {t.plural} have {c.said} {shown(v)} and {an(n.said)} of at least {x}? Give their "
               f"{name.said}.", f"List the {name.said} of the {t.plural} whose {c.said} is {shown(v)} and whose "
               f"{n.said} is {x} or more.", f"{title(t.plural)} with {c.said} {shown(v)} and {n.said} >= {x}: "
               f"{name.said}.")
    query = f"SELECT {name.name} FROM {t.name} WHERE {c.name} = {value(v)} AND {n.name} >= {x};"
    return Posed(text, query, query.replace(" AND ", " OR "), mentions=(c, n, name))


def year_stat(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "date"))
    if t is None:
        return None
    d = rng.choice(t.of("date"))
    years = distinct(v[:4] for v in t.values(d.name) if v)
    year = rng.choice(years[:-1] or years)  # before the last year, so a missing upper bound shows
    where = f"WHERE strftime('%Y', {d.name}) = '{year}'"
    wrong = f"WHERE {d.name} > '{year}-01-01'"
    if t.of("num") and rng.random() < 0.6:
        n = rng.choice(t.of("num"))
        text = say(rng, f"What is the average {n.said} of the {t.plural} whose {d.said} is in {year}, rounded to 2 "
                   f"decimal places?", f"Give the average {n.said}, rounded to 2 decimal places, over the {t.plural} "
                   f"with {an(d.said)} in {year}.", f"Average {n.said} (2 decimals) of {t.plural} with {d.said} in "
                   f"{year}.")
        head = f"SELECT ROUND(AVG({n.name}), 2) FROM {t.name} "
        return Posed(text, head + where + ";", head + wrong + ";", mentions=(d, n))
    text = say(rng, f"How many {t.plural} have {an(d.said)} in {year}?", f"Count the {t.plural} whose {d.said} falls "
               f"in {year}.", f"{title(t.plural)} with {an(d.said)} in {year}: how many?")
    head = f"SELECT COUNT(*) FROM {t.name} "
    return Posed(text, head + where + ";", head + wrong + ";", mentions=(d,))


def date_range(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "date"))
    if t is None:
        return None
    d = rng.choice(t.of("date"))
    start = rng.choice(distinct(t.values(d.name)))  # a stored date: the bounds matter
    end = (date.fromisoformat(start) + timedelta(days=rng.randint(30, 240))).isoformat()
    text = say(rng, f"How many {t.plural} have {an(d.said)} between {start} and {end}, both days included?",
               f"Count the {t.plural} whose {d.said} is from {start} to {end} inclusive.",
               f"{title(t.plural)} with {d.said} in [{start}, {end}] (inclusive): count.")
    return Posed(text, f"SELECT COUNT(*) FROM {t.name} WHERE {d.name} BETWEEN '{start}' AND '{end}';",
                 f"SELECT COUNT(*) FROM {t.name} WHERE {d.name} > '{start}' AND {d.name} < '{end}';", mentions=(d,))


def extreme(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "num", label=True))
    if t is None:
        return None
    c, name = rng.choice(t.of("num")), t.label
    high = rng.random() < 0.6
    ranked = sorted((v for v in t.values(c.name) if v is not None), reverse=high)
    if len(ranked) < 2 or ranked[0] == ranked[1]:
        return None  # a tie: "which one" has two answers
    most, order = ("highest", "DESC") if high else ("lowest", "ASC")
    text = say(rng, f"Which {t.noun} has the {most} {c.said}? Give its {name.said}.",
               f"Return the {name.said} of the {t.noun} with the {most} {c.said}.",
               f"{title(t.noun)} with the {most} {c.said}: {name.said}.")
    query = f"SELECT {name.name} FROM {t.name} WHERE {c.name} IS NOT NULL ORDER BY {c.name} {{}} LIMIT 1;"
    return Posed(text, query.format(order), query.format("ASC" if high else "DESC"), mentions=(c, name))


def avg_where(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "cat", "num"))
    if t is None:
        return None
    c, n = rng.choice(t.of("cat")), rng.choice(t.of("num"))
    v = rng.choice(distinct(t.values(c.name)))
    text = say(rng, f"What is the average {n.said} of the {t.plural} whose {c.said} is {shown(v)}? Round to 2 "
               f"decimal places.", f"Compute the average {n.said} over the {t.plural} with {c.said} {shown(v)}, "
               f"rounded to 2 decimal places.", f"Average {n.said} for {c.said} {shown(v)} (2 decimals).")
    head = f"SELECT ROUND(AVG({n.name}), 2) FROM {t.name}"
    return Posed(text, f"{head} WHERE {c.name} = {value(v)};", head + ";", mentions=(c, n))


def distinct_count(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, tables(db, "cat"))
    if t is None:
        return None
    c = rng.choice(t.of("cat"))
    text = say(rng, f"How many different {c.said} values appear among the {t.plural}?",
               f"Count the distinct {c.said} values of the {t.plural}.",
               f"Number of distinct {c.said} values in the {t.plural}.")
    return Posed(text, f"SELECT COUNT(DISTINCT {c.name}) FROM {t.name};", f"SELECT COUNT({c.name}) FROM {t.name};",
                 mentions=(c,))


def null_as_zero(rng: random.Random, db: Database) -> Posed | None:
    t = pick(rng, [t for t in db.tables if t.of("num", nullable=True)])
    if t is None:
        return None
    n = rng.choice(t.of("num", nullable=True))
    text = say(rng, f"What is the average {n.said} over all {t.plural}, counting a missing {n.said} as 0? Round "
               f"to 2 decimal places.", f"Average the {n.said} of every {t.noun}, treating a missing {n.said} as 0, "
               f"rounded to 2 decimal places.", f"Mean {n.said} across all {t.plural}, missing = 0, 2 decimals.")
    return Posed(text, f"SELECT ROUND(AVG(COALESCE({n.name}, 0)), 2) FROM {t.name};",
                 f"SELECT ROUND(AVG({n.name}), 2) FROM {t.name};", mentions=(n,))
