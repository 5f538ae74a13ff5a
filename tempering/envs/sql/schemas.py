"""Procedural SQLite databases for sql/sqlite-v1.

Every domain has the same shape, so one set of question families fits them all: people
(customers, students, employees, members) have events (orders, enrollments, assignments,
loans) on items (products, courses, projects, books) that belong to groups (categories,
departments, genres). A `Domain` names those tables and columns and the words the questions
use for them; `make_database` fills one with seeded rows: unique names, ISO dates, prices,
a few NULLs (missing emails and other optional columns), some people with no events, and
every group holding at least one item, so each family can be posed on any database.
"""

from __future__ import annotations

import random
import sqlite3
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Callable

FIRST = ("Ava", "Ben", "Chloe", "Dev", "Emma", "Femi", "Grace", "Hugo", "Iris", "Jon", "Kai", "Lena", "Maya", "Noah",
         "Omar", "Pia", "Quinn", "Rosa", "Sam", "Tara", "Umar", "Vera", "Wes", "Yara", "Zoe", "Liam", "Nina", "Owen")
LAST = ("Smith", "Garcia", "Chen", "Okafor", "Muller", "Rossi", "Kowalski", "Silva", "Nguyen", "Haddad", "Novak",
        "Larsen", "Patel", "Moreau", "Tanaka", "Ibrahim", "Fischer", "Costa", "Walsh", "Berg")
CITIES = ("Lyon", "Porto", "Leeds", "Graz", "Turin", "Ghent", "Bergen", "Malmo", "Cork", "Krakow", "Seville", "Utrecht")
EPOCH, END = date(2020, 1, 1), date(2024, 12, 31)

Extra = tuple[str, str, Callable[..., Any]]
"""An extra column: (name, SQL type, value maker). Items' makers take the rng; events' take
the rng and the event's date. They make the tables realistic; no question needs them."""


@dataclass(frozen=True)
class Domain:
    key: str
    about: str  # "an online shop": how the prompt introduces the database
    people: str  # the people table, e.g. "customers"
    person: str  # one of them, e.g. "customer"
    joined: str  # the people's date column
    joined_verb: str  # "joined": "How many customers joined in 2021?"
    joined_noun: str  # "join date"
    groups: str
    group: str
    group_names: tuple[str, ...]
    items: str
    item: str
    title: str  # the items' name column: "name" or "title"
    title_parts: tuple[tuple[str, ...], tuple[str, ...]]  # item names are one of each, joined by a space
    amount: str  # the items' number column, e.g. "price"
    amount_noun: str
    amount_type: str  # "REAL" or "INTEGER"
    make_amount: Callable[[random.Random], float | int]
    events: str
    event: str
    event_date: str
    event_date_noun: str
    measure: str  # the events' number column, e.g. "quantity"
    measure_noun: str
    measure_agg: str  # how questions aggregate it: "SUM" or "AVG"
    make_measure: Callable[[random.Random], int]
    item_extra: Extra
    event_extra: Extra | None = None

    @property
    def person_fk(self) -> str:
        return f"{self.person}_id"

    @property
    def item_fk(self) -> str:
        return f"{self.item}_id"

    @property
    def group_fk(self) -> str:
        return f"{self.group}_id"


def _maybe_null(rng: random.Random, value, p: float = 0.1):
    return None if rng.random() < p else value


def _returned(rng: random.Random, lent: date) -> str | None:
    """A loan's return date; None while the book is still out (one in five, and any due
    after the data ends)."""
    back = lent + timedelta(days=rng.randint(3, 45))
    return None if rng.random() < 0.2 or back > END else back.isoformat()


DOMAINS = {d.key: d for d in (
    Domain("shop", "an online shop", "customers", "customer", "joined_on", "joined", "join date",
           "categories", "category",
           ("Electronics", "Garden", "Toys", "Kitchen", "Sports", "Beauty", "Office", "Books"),
           "products", "product", "name",
           (("Compact", "Wireless", "Classic", "Deluxe", "Portable", "Smart", "Eco", "Pro"),
            ("Blender", "Headphones", "Lamp", "Backpack", "Kettle", "Speaker", "Notebook", "Drill", "Yoga Mat",
             "Toaster")),
           "price", "price", "REAL", lambda r: round(r.uniform(3, 400), 2),
           "orders", "order", "order_date", "order date", "quantity", "quantity", "SUM", lambda r: r.randint(1, 6),
           ("stock", "INTEGER", lambda r: _maybe_null(r, r.randint(0, 500)))),
    Domain("school", "a university", "students", "student", "admitted_on", "were admitted", "admission date",
           "departments", "department",
           ("Mathematics", "Physics", "History", "Biology", "Chemistry", "Literature", "Economics", "Philosophy"),
           "courses", "course", "title",
           (("Introduction to", "Advanced", "Applied", "Topics in", "Foundations of", "Modern"),
            ("Algebra", "Statistics", "Optics", "Genetics", "Ethics", "Poetry", "Databases", "Trade", "Ecology",
             "Logic")),
           "capacity", "capacity", "INTEGER", lambda r: r.randint(15, 240),
           "enrollments", "enrollment", "enrollment_date", "enrollment date", "grade", "grade", "AVG",
           lambda r: r.randint(35, 100),
           ("credits", "INTEGER", lambda r: r.randint(1, 6))),
    Domain("hr", "a company's staff and projects", "employees", "employee", "hired_on", "were hired", "hire date",
           "departments", "department",
           ("Engineering", "Sales", "Marketing", "Finance", "Support", "Legal", "Operations", "Research"),
           "projects", "project", "name",
           (("Apollo", "Blue", "Red", "Silver", "North", "Rapid", "Quiet", "Bright"),
            ("Falcon", "Harbor", "Summit", "Bridge", "Lantern", "Orbit", "Atlas", "Beacon")),
           "budget", "budget", "INTEGER", lambda r: r.randint(20, 900) * 1000,
           "assignments", "assignment", "start_date", "start date", "hours", "hours", "SUM",
           lambda r: r.randint(4, 160),
           ("status", "TEXT", lambda r: r.choice(("planned", "active", "done"))),
           ("role", "TEXT", lambda r, day: r.choice(("developer", "analyst", "lead", "tester")))),
    Domain("library", "a public library", "members", "member", "joined_on", "joined", "join date",
           "genres", "genre",
           ("Fantasy", "Mystery", "Science Fiction", "Romance", "History", "Biography", "Poetry", "Thriller"),
           "books", "book", "title",
           (("The Silent", "The Last", "A Distant", "The Hidden", "Winter", "The Broken", "Golden", "The Secret"),
            ("River", "Garden", "Empire", "Letter", "Voyage", "Kingdom", "Orchard", "Mirror")),
           "pages", "page count", "INTEGER", lambda r: r.randint(90, 950),
           "loans", "loan", "loan_date", "loan date", "renewals", "number of renewals", "SUM",
           lambda r: r.randint(0, 3),
           ("published_year", "INTEGER", lambda r: r.randint(1950, 2023)),
           ("return_date", "TEXT", lambda r, day: _returned(r, day))),
)}


@dataclass(frozen=True)
class Table:
    name: str
    ddl: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]


@dataclass(frozen=True)
class Database:
    domain: Domain
    tables: tuple[Table, ...]

    def rows(self, table: str) -> list[dict[str, Any]]:
        t = next(t for t in self.tables if t.name == table)
        return [dict(zip(t.columns, row)) for row in t.rows]

    def connect(self) -> sqlite3.Connection:
        """The database in memory on the host, for trusted queries only (checking a
        generated question, serializing it into the task): candidate queries run in the sandbox."""
        con = sqlite3.connect(":memory:")
        for t in self.tables:
            con.execute(t.ddl)
            con.executemany(f"INSERT INTO {t.name} VALUES ({', '.join('?' * len(t.columns))})", t.rows)
        con.commit()
        return con

    def describe(self) -> str:
        """The schema and the first three rows of each table, as the prompt shows them."""
        ddl = "\n".join(t.ddl + ";" for t in self.tables)
        samples = []
        for t in self.tables:
            lines = [f"{t.name} ({len(t.rows)} rows)", " | ".join(t.columns)]
            lines += [" | ".join("NULL" if v is None else str(v) for v in row) for row in t.rows[:3]]
            samples.append("\n".join(lines))
        return f"Schema:\n```sql\n{ddl}\n```\n\nSample rows (the first 3 of each table):\n" + "\n\n".join(samples)


def _ddl(name: str, columns: list[str]) -> str:
    return f"CREATE TABLE {name} (\n  " + ",\n  ".join(columns) + "\n)"


def _day(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randint(0, (end - start).days))


def make_database(rng: random.Random, domain: Domain) -> Database:
    """A database of `domain`: 5-8 groups, 20-40 items, 20-60 people, 60-200 events."""
    d = domain
    n_groups, n_items, n_people = rng.randint(5, 8), rng.randint(20, 40), rng.randint(20, 60)
    cities = rng.sample(CITIES, rng.randint(4, 7))

    names = rng.sample([f"{first} {last}" for first in FIRST for last in LAST], n_people)
    people = []
    for i, name in enumerate(names, 1):
        email = f"{name.lower().replace(' ', '.')}@example.com"
        people.append((i, name, rng.choice(cities), _maybe_null(rng, email, 0.15),
                       _day(rng, EPOCH, date(2023, 6, 30)).isoformat()))
    people_cols = ["id INTEGER PRIMARY KEY", "name TEXT NOT NULL", "city TEXT NOT NULL", "email TEXT",
                   f"{d.joined} TEXT NOT NULL"]

    groups = [(i, name) for i, name in enumerate(rng.sample(d.group_names, n_groups), 1)]
    titles = rng.sample([f"{a} {b}" for a in d.title_parts[0] for b in d.title_parts[1]], n_items)
    # the first n_groups items go one to each group, so no group is empty
    items = [(i, title, i if i <= n_groups else rng.randint(1, n_groups), d.make_amount(rng), d.item_extra[2](rng))
             for i, title in enumerate(titles, 1)]
    item_cols = ["id INTEGER PRIMARY KEY", f"{d.title} TEXT NOT NULL",
                 f"{d.group_fk} INTEGER NOT NULL REFERENCES {d.groups}(id)", f"{d.amount} {d.amount_type} NOT NULL",
                 f"{d.item_extra[0]} {d.item_extra[1]}"]

    active = rng.sample(people, max(1, int(n_people * rng.uniform(0.75, 0.9))))  # the rest have no events
    drawn = []
    for _ in range(rng.randint(60, 200)):
        person = rng.choice(active)
        day = _day(rng, date.fromisoformat(person[4]), END)
        extra = (d.event_extra[2](rng, day),) if d.event_extra else ()
        drawn.append((day.isoformat(), person[0], rng.randint(1, n_items), d.make_measure(rng), *extra))
    drawn.sort(key=lambda e: e[0])  # ids follow the dates, as in a real log
    events = [(i, pid, iid, day, m, *extra) for i, (day, pid, iid, m, *extra) in enumerate(drawn, 1)]
    event_cols = ["id INTEGER PRIMARY KEY", f"{d.person_fk} INTEGER NOT NULL REFERENCES {d.people}(id)",
                  f"{d.item_fk} INTEGER NOT NULL REFERENCES {d.items}(id)", f"{d.event_date} TEXT NOT NULL",
                  f"{d.measure} INTEGER NOT NULL"]
    event_cols += [f"{d.event_extra[0]} {d.event_extra[1]}"] if d.event_extra else []

    group_cols = ["id INTEGER PRIMARY KEY", "name TEXT NOT NULL UNIQUE"]
    specs = [(d.people, people_cols, people), (d.groups, group_cols, groups), (d.items, item_cols, items),
             (d.events, event_cols, events)]
    return Database(d, tuple(Table(name, _ddl(name, cols), tuple(c.split()[0] for c in cols), tuple(map(tuple, rows)))
                             for name, cols, rows in specs))
