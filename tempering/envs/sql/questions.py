"""Question families for sql/sqlite-v1, from a one-table count (level 1) to correlated
subqueries and date arithmetic (level 5).

A family reads the generated rows, picks its parameters from them (a city that exists, a
threshold equal to a stored value, so `>` and `>=` differ) and returns the question, the
reference query and a broken query: the kind of mistake a model makes (a wrong join key, an
off-by-one comparison, the wrong sort direction). It returns None when this database can't
pose it well (a tie where one answer is asked for); `generate` then draws again. Ordered
questions say how to break ties, so exactly one row order is right.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Callable

from tempering.envs.sql.schemas import Database, Domain


@dataclass(frozen=True)
class Question:
    text: str
    query: str
    broken: str
    ordered: bool = False


def lit(value: str) -> str:
    """An SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def _measure(d: Domain, alias: str = "") -> tuple[str, str, str]:
    """(SQL expression, "total quantity" / "average grade", rounding clause) for the events' number."""
    col = f"{alias}{d.measure}"
    if d.measure_agg == "AVG":
        return f"ROUND(AVG({col}), 2)", f"average {d.measure_noun}", ", rounded to 2 decimal places"
    return f"SUM({col})", f"total {d.measure_noun}", ""


def _years(values) -> list[str]:
    return sorted({v[:4] for v in values})


# -- level 1: one table, one filter ------------------------------------------------------

def count_city(rng: random.Random, db: Database) -> Question:
    d = db.domain
    city = rng.choice(sorted({p["city"] for p in db.rows(d.people)}))
    return Question(f"How many {d.people} live in {city}?",
                    f"SELECT COUNT(*) FROM {d.people} WHERE city = {lit(city)};",
                    f"SELECT COUNT(*) FROM {d.people} WHERE city <> {lit(city)};")


def list_above(rng: random.Random, db: Database) -> Question | None:
    d = db.domain
    amounts = sorted({i[d.amount] for i in db.rows(d.items)}, reverse=True)
    if len(amounts) < 4:
        return None
    x = amounts[rng.randint(2, min(8, len(amounts) - 1))]  # a stored value: `>=` would also list its item
    return Question(f"List the {d.title} of every {d.item} whose {d.amount_noun} is greater than {x}.",
                    f"SELECT {d.title} FROM {d.items} WHERE {d.amount} > {x};",
                    f"SELECT {d.title} FROM {d.items} WHERE {d.amount} >= {x};")


def missing_email(rng: random.Random, db: Database) -> Question:
    d = db.domain
    return Question(f"How many {d.people} have no email address on record?",
                    f"SELECT COUNT(*) FROM {d.people} WHERE email IS NULL;",
                    f"SELECT COUNT(*) FROM {d.people} WHERE email = '';")


# -- level 2: aggregates and date filters ------------------------------------------------

def year_total(rng: random.Random, db: Database) -> Question:
    d = db.domain
    year = rng.choice(_years(e[d.event_date] for e in db.rows(d.events)))
    expr, what, rounding = _measure(d)
    return Question(f"What is the {what} of all {d.events} whose {d.event_date_noun} is in {year}{rounding}?",
                    f"SELECT {expr} FROM {d.events} WHERE strftime('%Y', {d.event_date}) = '{year}';",
                    f"SELECT {expr} FROM {d.events} WHERE {d.event_date} > '{year}-01-01';")


def date_range(rng: random.Random, db: Database) -> Question:
    d = db.domain
    start = rng.choice(sorted({e[d.event_date] for e in db.rows(d.events)}))  # a stored date: the bounds matter
    end = (date.fromisoformat(start) + timedelta(days=rng.randint(30, 240))).isoformat()
    return Question(f"How many {d.events} have their {d.event_date_noun} between {start} and {end} "
                    f"(both days included)?",
                    f"SELECT COUNT(*) FROM {d.events} WHERE {d.event_date} BETWEEN '{start}' AND '{end}';",
                    f"SELECT COUNT(*) FROM {d.events} WHERE {d.event_date} > '{start}' AND {d.event_date} < '{end}';")


def max_amount(rng: random.Random, db: Database) -> Question | None:
    d = db.domain
    top = sorted((i[d.amount] for i in db.rows(d.items)), reverse=True)
    if top[0] == top[1]:
        return None  # a tie: "which one" has two answers
    return Question(f"Which {d.item} has the highest {d.amount_noun}? Return its {d.title}.",
                    f"SELECT {d.title} FROM {d.items} ORDER BY {d.amount} DESC LIMIT 1;",
                    f"SELECT {d.title} FROM {d.items} ORDER BY {d.amount} LIMIT 1;")


def joined_year(rng: random.Random, db: Database) -> Question:
    d = db.domain
    year = rng.choice(_years(p[d.joined] for p in db.rows(d.people)))
    return Question(f"How many {d.people} {d.joined_verb} in {year}?",
                    f"SELECT COUNT(*) FROM {d.people} WHERE strftime('%Y', {d.joined}) = '{year}';",
                    f"SELECT COUNT(*) FROM {d.people} WHERE {d.joined} >= '{year}-01-01';")


# -- level 3: GROUP BY / HAVING, two-table joins -----------------------------------------

def per_city(rng: random.Random, db: Database) -> Question:
    d = db.domain
    return Question(f"For each city, how many {d.people} live there? Return the city and the number of {d.people}.",
                    f"SELECT city, COUNT(*) FROM {d.people} GROUP BY city;",
                    f"SELECT city, COUNT(email) FROM {d.people} GROUP BY city;")


def having(rng: random.Random, db: Database) -> Question | None:
    d = db.domain
    counts = Counter(p["city"] for p in db.rows(d.people))
    # k equal to some city's count (so `>` differs) and below the largest (so some city qualifies)
    ks = sorted({c for c in counts.values() if c < max(counts.values())})
    if not ks:
        return None
    k = rng.choice(ks)
    return Question(f"Which cities have at least {k} {d.people}? Return the city names.",
                    f"SELECT city FROM {d.people} GROUP BY city HAVING COUNT(*) >= {k};",
                    f"SELECT city FROM {d.people} GROUP BY city HAVING COUNT(*) > {k};")


def in_group(rng: random.Random, db: Database) -> Question:
    d = db.domain
    group = rng.choice([g["name"] for g in db.rows(d.groups)])
    join = f"SELECT i.{d.title} FROM {d.items} i JOIN {d.groups} g ON g.id = "
    return Question(f"List the {d.title} of every {d.item} in the {d.group} {lit(group)}.",
                    f"{join}i.{d.group_fk} WHERE g.name = {lit(group)};",
                    f"{join}i.id WHERE g.name = {lit(group)};")


def person_count(rng: random.Random, db: Database) -> Question:
    d = db.domain
    pid = rng.choice(sorted({e[d.person_fk] for e in db.rows(d.events)}))
    name = next(p["name"] for p in db.rows(d.people) if p["id"] == pid)
    join = f"SELECT COUNT(*) FROM {d.events} e JOIN {d.people} p ON p.id = "
    return Question(f"How many {d.events} does {name} have?",
                    f"{join}e.{d.person_fk} WHERE p.name = {lit(name)};",
                    f"{join}e.id WHERE p.name = {lit(name)};")


# -- level 4: join + group + order + limit -----------------------------------------------

def top_groups(rng: random.Random, db: Database) -> Question:
    d = db.domain
    expr, what, rounding = _measure(d, "e.")
    query = (f"SELECT g.name, {expr} AS value\nFROM {d.events} e\nJOIN {d.items} i ON i.id = e.{d.item_fk}\n"
             f"JOIN {d.groups} g ON g.id = i.{d.group_fk}\nGROUP BY g.id\nORDER BY value {{}}, g.name\nLIMIT 3;")
    return Question(f"Which 3 {d.groups} have the highest {what} over the {d.events} of their {d.items}{rounding}? "
                    f"Return the {d.group} name and that value, highest first; break ties by {d.group} name (A to Z).",
                    query.format("DESC"), query.format("ASC"), ordered=True)


def top_people(rng: random.Random, db: Database) -> Question:
    d = db.domain
    k = rng.choice((3, 4, 5))
    query = (f"SELECT p.name, COUNT({{}}) AS n\nFROM {d.people} p\nJOIN {d.events} e ON e.{d.person_fk} = p.id\n"
             f"GROUP BY p.id\nORDER BY n DESC, p.name\nLIMIT {k};")
    return Question(f"Which {k} {d.people} have the most {d.events}? Return each name and their number of {d.events}, "
                    f"most first; break ties by name (A to Z).",
                    query.format("*"), query.format(f"DISTINCT e.{d.item_fk}"), ordered=True)


def group_avg(rng: random.Random, db: Database) -> Question:
    d = db.domain
    query = (f"SELECT g.name, ROUND(AVG(i.{d.amount}), 2) AS average\nFROM {d.groups} g\n"
             f"JOIN {d.items} i ON i.{d.group_fk} = g.id\nGROUP BY g.id\nORDER BY average {{}}, g.name;")
    return Question(f"For each {d.group}, what is the average {d.amount_noun} of its {d.items}, rounded to 2 decimal "
                    f"places? Return the {d.group} name and the average, highest average first; break ties by "
                    f"{d.group} name (A to Z).", query.format("DESC"), query.format("ASC"), ordered=True)


# -- level 5: subqueries, anti-joins, date arithmetic ------------------------------------

def above_group_avg(rng: random.Random, db: Database) -> Question:
    d = db.domain
    query = (f"SELECT i.{d.title}\nFROM {d.items} i\n"
             f"WHERE i.{d.amount} > (SELECT AVG(x.{d.amount}) FROM {d.items} x{{}});")
    return Question(f"List the {d.title} of every {d.item} whose {d.amount_noun} is higher than the average "
                    f"{d.amount_noun} of the {d.items} in its own {d.group}.",
                    query.format(f" WHERE x.{d.group_fk} = i.{d.group_fk}"), query.format(""))


def never(rng: random.Random, db: Database) -> Question:
    d = db.domain
    query = f"SELECT name FROM {d.people} WHERE id NOT IN (SELECT {{}} FROM {d.events});"
    return Question(f"Which {d.people} have no {d.events} at all? Return their names.",
                    query.format(d.person_fk), query.format(d.item_fk))


def monthly(rng: random.Random, db: Database) -> Question | None:
    d = db.domain
    months = Counter(e[d.event_date][:7] for e in db.rows(d.events))
    years = [y for y in _years(months) if sum(m.startswith(y) for m in months) >= 3]
    if not years:
        return None
    year = rng.choice(years)
    query = (f"SELECT strftime('%Y-%m', {d.event_date}) AS month, COUNT(*)\nFROM {d.events}\n"
             f"WHERE strftime('%Y', {d.event_date}) = '{year}'\nGROUP BY month\nORDER BY month{{}};")
    return Question(f"For each month of {year}, how many {d.events} have their {d.event_date_noun} in that month? "
                    f"Return the month as 'YYYY-MM' and the count, in chronological order, leaving out months with "
                    f"no {d.events}.", query.format(""), query.format(" DESC"), ordered=True)


def within_days(rng: random.Random, db: Database) -> Question:
    d = db.domain
    n = rng.choice((30, 60, 90))
    join = f"SELECT COUNT(*)\nFROM {d.events} e\nJOIN {d.people} p ON p.id = e.{d.person_fk}\nWHERE "
    return Question(f"For how many {d.events} is the {d.event_date_noun} at most {n} days after the {d.person}'s "
                    f"{d.joined_noun}?",
                    f"{join}julianday(e.{d.event_date}) - julianday(p.{d.joined}) <= {n};",
                    f"{join}e.{d.event_date} <= date(p.{d.joined}, '+{n} months');")


Family = Callable[[random.Random, Database], Question | None]
FAMILIES: dict[str, tuple[int, Family]] = {  # name -> (difficulty level, family)
    "count_city": (1, count_city), "list_above": (1, list_above), "missing_email": (1, missing_email),
    "year_total": (2, year_total), "date_range": (2, date_range), "max_amount": (2, max_amount),
    "joined_year": (2, joined_year),
    "per_city": (3, per_city), "having": (3, having), "in_group": (3, in_group), "person_count": (3, person_count),
    "top_groups": (4, top_groups), "top_people": (4, top_people), "group_avg": (4, group_avg),
    "above_group_avg": (5, above_group_avg), "never": (5, never), "monthly": (5, monthly),
    "within_days": (5, within_days),
}
MAX_LEVEL = max(level for level, _ in FAMILIES.values())
