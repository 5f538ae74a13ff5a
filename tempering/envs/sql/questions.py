"""Question families for sql/sqlite-v1, from a one-table count (level 1) to correlated
subqueries and date arithmetic (level 5).

A family reads the generated rows, picks its parameters from them (a city that exists, a
threshold equal to a stored value, so `>` and `>=` differ) and returns the question, the
reference query and a broken query: the kind of mistake a model makes (a wrong join key, an
off-by-one comparison, the wrong sort direction). It returns None when this database can't
pose it well (a tie where one answer is asked for); `generate` then draws again. Ordered
questions say how to break ties, so exactly one row order is right.

The question speaks the theme's English (`db.domain`: "customers", "join date"); the queries
use this database's identifiers (`db.names`: `tbl_customer.signup_date`), so they stay right
under any naming style. Each family words its question in one of several ways, drawn by the rng.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Callable

from tempering.envs.sql.schemas import Database, Domain, Names


@dataclass(frozen=True)
class Question:
    text: str
    query: str
    broken: str
    ordered: bool = False


def lit(value: str) -> str:
    """An SQL string literal."""
    return "'" + value.replace("'", "''") + "'"


def _noun(column: str) -> str:
    """How a question names a column: "flight_code" -> "flight code"."""
    return column.replace("_", " ")


def _measure(d: Domain, n: Names, alias: str = "") -> tuple[str, str, str]:
    """(SQL expression, "total quantity" / "average grade", rounding clause) for the events' number."""
    col = f"{alias}{n.measure}"
    if d.measure_agg == "AVG":
        return f"ROUND(AVG({col}), 2)", f"average {d.measure_noun}", ", rounded to 2 decimal places"
    return f"SUM({col})", f"total {d.measure_noun}", ""


def _years(values) -> list[str]:
    return sorted({v[:4] for v in values})


# -- level 1: one table, one filter ------------------------------------------------------

def count_city(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    city = rng.choice(sorted({p[n.city] for p in db.rows(n.people)}))
    text = rng.choice((f"How many {d.people} live in {city}?", f"How many {d.people} are from {city}?",
                       f"Count the {d.people} whose city is {city}."))
    return Question(text, f"SELECT COUNT(*) FROM {n.people} WHERE {n.city} = {lit(city)};",
                    f"SELECT COUNT(*) FROM {n.people} WHERE {n.city} <> {lit(city)};")


def list_above(rng: random.Random, db: Database) -> Question | None:
    d, n = db.domain, db.names
    amounts = sorted({i[n.amount] for i in db.rows(n.items)}, reverse=True)
    if len(amounts) < 4:
        return None
    x = amounts[rng.randint(2, min(8, len(amounts) - 1))]  # a stored value: `>=` would also list its item
    text = rng.choice((f"List the {_noun(d.title)} of every {d.item} whose {d.amount_noun} is greater than {x}.",
                       f"Which {d.items} have a {d.amount_noun} greater than {x}? Return the {_noun(d.title)} "
                       f"of each."))
    return Question(text, f"SELECT {n.title} FROM {n.items} WHERE {n.amount} > {x};",
                    f"SELECT {n.title} FROM {n.items} WHERE {n.amount} >= {x};")


def missing_email(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    text = rng.choice((f"How many {d.people} have no email address on record?",
                       f"How many {d.people} are missing an email address?"))
    return Question(text, f"SELECT COUNT(*) FROM {n.people} WHERE {n.email} IS NULL;",
                    f"SELECT COUNT(*) FROM {n.people} WHERE {n.email} = '';")


# -- level 2: aggregates and date filters ------------------------------------------------

def year_total(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    year = rng.choice(_years(e[n.event_date] for e in db.rows(n.events)))
    expr, what, rounding = _measure(d, n)
    text = rng.choice((f"What is the {what} of all {d.events} whose {d.event_date_noun} is in {year}{rounding}?",
                       f"Over the {d.events} with a {d.event_date_noun} in {year}, what is the {what}{rounding}?"))
    return Question(text, f"SELECT {expr} FROM {n.events} WHERE strftime('%Y', {n.event_date}) = '{year}';",
                    f"SELECT {expr} FROM {n.events} WHERE {n.event_date} > '{year}-01-01';")


def date_range(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    start = rng.choice(sorted({e[n.event_date] for e in db.rows(n.events)}))  # a stored date: the bounds matter
    end = (date.fromisoformat(start) + timedelta(days=rng.randint(30, 240))).isoformat()
    text = rng.choice((f"How many {d.events} have their {d.event_date_noun} between {start} and {end} "
                       f"(both days included)?",
                       f"Count the {d.events} whose {d.event_date_noun} falls from {start} to {end}, both days "
                       f"included."))
    return Question(text, f"SELECT COUNT(*) FROM {n.events} WHERE {n.event_date} BETWEEN '{start}' AND '{end}';",
                    f"SELECT COUNT(*) FROM {n.events} WHERE {n.event_date} > '{start}' AND {n.event_date} < '{end}';")


def max_amount(rng: random.Random, db: Database) -> Question | None:
    d, n = db.domain, db.names
    top = sorted((i[n.amount] for i in db.rows(n.items)), reverse=True)
    if top[0] == top[1]:
        return None  # a tie: "which one" has two answers
    text = rng.choice((f"Which {d.item} has the highest {d.amount_noun}? Return its {_noun(d.title)}.",
                       f"Return the {_noun(d.title)} of the {d.item} with the largest {d.amount_noun}."))
    return Question(text, f"SELECT {n.title} FROM {n.items} ORDER BY {n.amount} DESC LIMIT 1;",
                    f"SELECT {n.title} FROM {n.items} ORDER BY {n.amount} LIMIT 1;")


def joined_year(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    year = rng.choice(_years(p[n.joined] for p in db.rows(n.people)))
    text = rng.choice((f"How many {d.people} {d.joined_verb} in {year}?",
                       f"How many {d.people} have a {d.joined_noun} in {year}?"))
    return Question(text, f"SELECT COUNT(*) FROM {n.people} WHERE strftime('%Y', {n.joined}) = '{year}';",
                    f"SELECT COUNT(*) FROM {n.people} WHERE {n.joined} >= '{year}-01-01';")


# -- level 3: GROUP BY / HAVING, two-table joins -----------------------------------------

def per_city(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    text = rng.choice((f"For each city, how many {d.people} live there? Return the city and the number of "
                       f"{d.people}.", f"Count the {d.people} per city. Return each city and its number of {d.people}."))
    return Question(text, f"SELECT {n.city}, COUNT(*) FROM {n.people} GROUP BY {n.city};",
                    f"SELECT {n.city}, COUNT({n.email}) FROM {n.people} GROUP BY {n.city};")


def having(rng: random.Random, db: Database) -> Question | None:
    d, n = db.domain, db.names
    counts = Counter(p[n.city] for p in db.rows(n.people))
    # k equal to some city's count (so `>` differs), below the largest (so some city qualifies)
    # and above the smallest (so some city doesn't, and a query without HAVING is wrong)
    lo, hi = min(counts.values()), max(counts.values())
    ks = sorted({c for c in counts.values() if lo < c < hi})
    if not ks:
        return None
    k = rng.choice(ks)
    text = rng.choice((f"Which cities have at least {k} {d.people}? Return the city names.",
                       f"List the cities where {k} or more {d.people} live."))
    return Question(text, f"SELECT {n.city} FROM {n.people} GROUP BY {n.city} HAVING COUNT(*) >= {k};",
                    f"SELECT {n.city} FROM {n.people} GROUP BY {n.city} HAVING COUNT(*) > {k};")


def in_group(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    group = rng.choice([g[n.group_name] for g in db.rows(n.groups)])
    join = f"SELECT i.{n.title} FROM {n.items} i JOIN {n.groups} g ON g.{n.group_pk} = "
    text = rng.choice((f"List the {_noun(d.title)} of every {d.item} in the {d.group} {lit(group)}.",
                       f"Which {d.items} belong to the {d.group} {lit(group)}? Return the {_noun(d.title)} of each."))
    return Question(text, f"{join}i.{n.group_fk} WHERE g.{n.group_name} = {lit(group)};",
                    f"{join}i.{n.item_pk} WHERE g.{n.group_name} = {lit(group)};")


def person_count(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    pid = rng.choice(sorted({e[n.person_fk] for e in db.rows(n.events)}))
    name = next(p[n.name] for p in db.rows(n.people) if p[n.person_pk] == pid)
    join = f"SELECT COUNT(*) FROM {n.events} e JOIN {n.people} p ON p.{n.person_pk} = "
    text = rng.choice((f"How many {d.events} does {name} have?", f"Count the {d.events} of the {d.person} {name}."))
    return Question(text, f"{join}e.{n.person_fk} WHERE p.{n.name} = {lit(name)};",
                    f"{join}e.{n.event_pk} WHERE p.{n.name} = {lit(name)};")


# -- level 4: join + group + order + limit -----------------------------------------------

def top_groups(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    expr, what, rounding = _measure(d, n, "e.")
    query = (f"SELECT g.{n.group_name}, {expr} AS value\nFROM {n.events} e\n"
             f"JOIN {n.items} i ON i.{n.item_pk} = e.{n.item_fk}\nJOIN {n.groups} g ON g.{n.group_pk} = i.{n.group_fk}"
             f"\nGROUP BY g.{n.group_pk}\nORDER BY value {{}}, g.{n.group_name}\nLIMIT 3;")
    ties = f"break ties by {d.group} name (A to Z)"
    text = rng.choice((f"Which 3 {d.groups} have the highest {what} over the {d.events} of their {d.items}{rounding}? "
                       f"Return the {d.group} name and that value, highest first; {ties}.",
                       f"Rank the {d.groups} by the {what} of the {d.events} of their {d.items}{rounding}, and return "
                       f"the top 3: the {d.group} name and that value, highest first; {ties}."))
    return Question(text, query.format("DESC"), query.format("ASC"), ordered=True)


def top_people(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    k = rng.choice((3, 4, 5))
    query = (f"SELECT p.{n.name}, COUNT({{}}) AS n\nFROM {n.people} p\nJOIN {n.events} e ON e.{n.person_fk} = "
             f"p.{n.person_pk}\nGROUP BY p.{n.person_pk}\nORDER BY n DESC, p.{n.name}\nLIMIT {k};")
    answer = f"each name and their number of {d.events}, most first; break ties by name (A to Z)"
    text = rng.choice((f"Which {k} {d.people} have the most {d.events}? Return {answer}.",
                       f"List the {k} {d.people} with the most {d.events}: {answer}."))
    return Question(text, query.format("*"), query.format(f"DISTINCT e.{n.item_fk}"), ordered=True)


def group_avg(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    query = (f"SELECT g.{n.group_name}, ROUND(AVG(i.{n.amount}), 2) AS average\nFROM {n.groups} g\n"
             f"JOIN {n.items} i ON i.{n.group_fk} = g.{n.group_pk}\nGROUP BY g.{n.group_pk}\n"
             f"ORDER BY average {{}}, g.{n.group_name};")
    answer = (f"Return the {d.group} name and the average, highest average first; break ties by {d.group} name "
              f"(A to Z).")
    text = rng.choice((f"For each {d.group}, what is the average {d.amount_noun} of its {d.items}, rounded to 2 "
                       f"decimal places? {answer}",
                       f"What is the average {d.amount_noun} of the {d.items} in each {d.group}, rounded to 2 "
                       f"decimal places? {answer}"))
    return Question(text, query.format("DESC"), query.format("ASC"), ordered=True)


# -- level 5: subqueries, anti-joins, date arithmetic ------------------------------------

def above_group_avg(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    query = (f"SELECT i.{n.title}\nFROM {n.items} i\n"
             f"WHERE i.{n.amount} > (SELECT AVG(x.{n.amount}) FROM {n.items} x{{}});")
    text = rng.choice((f"List the {_noun(d.title)} of every {d.item} whose {d.amount_noun} is higher than the "
                       f"average {d.amount_noun} of the {d.items} in its own {d.group}.",
                       f"Which {d.items} have a {d.amount_noun} higher than the average of the {d.items} in their "
                       f"own {d.group}? Return the {_noun(d.title)} of each."))
    return Question(text, query.format(f" WHERE x.{n.group_fk} = i.{n.group_fk}"), query.format(""))


def never(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    query = f"SELECT {n.name} FROM {n.people} WHERE {n.person_pk} NOT IN (SELECT {{}} FROM {n.events});"
    text = rng.choice((f"Which {d.people} have no {d.events} at all? Return their names.",
                       f"List the names of the {d.people} without any {d.events}."))
    return Question(text, query.format(n.person_fk), query.format(n.item_fk))


def monthly(rng: random.Random, db: Database) -> Question | None:
    d, n = db.domain, db.names
    months = Counter(e[n.event_date][:7] for e in db.rows(n.events))
    years = [y for y in _years(months) if sum(m.startswith(y) for m in months) >= 3]
    if not years:
        return None
    year = rng.choice(years)
    query = (f"SELECT strftime('%Y-%m', {n.event_date}) AS month, COUNT(*)\nFROM {n.events}\n"
             f"WHERE strftime('%Y', {n.event_date}) = '{year}'\nGROUP BY month\nORDER BY month{{}};")
    answer = (f"Return the month as 'YYYY-MM' and the count, in chronological order, leaving out months with no "
              f"{d.events}.")
    text = rng.choice((f"For each month of {year}, how many {d.events} have their {d.event_date_noun} in that month? "
                       f"{answer}", f"Count the {d.events} in each month of {year}, by {d.event_date_noun}. {answer}"))
    return Question(text, query.format(""), query.format(" DESC"), ordered=True)


def within_days(rng: random.Random, db: Database) -> Question:
    d, n = db.domain, db.names
    days = rng.choice((30, 60, 90))
    join = f"SELECT COUNT(*)\nFROM {n.events} e\nJOIN {n.people} p ON p.{n.person_pk} = e.{n.person_fk}\nWHERE "
    text = rng.choice((f"For how many {d.events} is the {d.event_date_noun} at most {days} days after the "
                       f"{d.person}'s {d.joined_noun}?",
                       f"How many {d.events} have a {d.event_date_noun} no more than {days} days after the "
                       f"{d.person}'s {d.joined_noun}?"))
    return Question(text, f"{join}julianday(e.{n.event_date}) - julianday(p.{n.joined}) <= {days};",
                    f"{join}e.{n.event_date} <= date(p.{n.joined}, '+{days} months');")


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
