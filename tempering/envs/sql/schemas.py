"""Procedural SQLite databases for sql/sqlite-v1: a theme's four tables, named in a style
drawn per database, filled with seeded rows.

Every theme (themes.py) has the same shape, so one set of question families fits them all:
people (customers, patients, riders...) have events (orders, visits, trips...) on items
(products, doctors, stations...) that belong to groups (categories, wards, zones...). A
`Domain` holds a theme's words: the English the questions use and each column's usual name.

What varies per database, drawn from the task's rng, is what varies between real schemas:

- the naming style (`Style`): snake_case or PascalCase, plural or singular table names, a
  `tbl_` prefix or none, primary keys named `id` or `<entity>_id` (foreign keys follow), each
  CREATE TABLE on one line or a column a line;
- a synonym for each column where real schemas use several (city, town or location; joined_on,
  signup_date or registered_on; price or unit_price...), from SYNONYMS;
- the order of the columns after each table's key.

`Names` records the identifiers one database ended up with; the question families build
their reference and broken queries from it, never from the theme's usual names.
`make_database` fills the tables: unique names, ISO dates, a few NULLs (missing emails and
other optional columns), some people with no events, and every group holding at least one
item, so each family can be posed on any database.
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
    """A theme: the questions' words for its tables, and its columns' usual names. The
    people, groups, items and events fields are the English plurals the questions use."""

    key: str
    about: str  # "an online shop": how the prompt introduces the database
    people: str  # the people, e.g. "customers"
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


def maybe_null(rng: random.Random, value, p: float = 0.1):
    return None if rng.random() < p else value


# -- naming ------------------------------------------------------------------------------

SYNONYMS = {  # a column's usual name -> other names real schemas give it ({e}: the table's entity)
    "city": ("town", "location", "home_city"), "email": ("email_address", "contact_email"),
    "name": ("{e}_name",), "title": ("{e}_title",), "model": ("model_name",), "flight_code": ("flight_no", "code"),
    "address": ("street_address",),
    # the people's dates
    "joined_on": ("join_date", "signup_date", "registered_on"), "admitted_on": ("admission_date", "enrolled_on"),
    "hired_on": ("hire_date", "start_date"), "registered_on": ("registration_date", "signup_date"),
    "member_since": ("joined_on", "membership_date"), "signed_up": ("signup_date", "joined_on"),
    "first_visit": ("first_visit_date",), "client_since": ("customer_since", "registered_on"),
    "account_created": ("created_on", "created_at"), "signed_on": ("signing_date", "joined_on"),
    "first_gift": ("first_gift_date", "first_donation"),
    # the items' numbers
    "price": ("unit_price", "list_price"), "capacity": ("max_capacity", "places"), "budget": ("budget_eur",),
    "pages": ("page_count", "num_pages"), "fare": ("base_fare", "price"), "nightly_rate": ("rate", "price_per_night"),
    "duration_sec": ("length_sec", "seconds"), "rental_rate": ("rate", "price"), "weight_kg": ("weight", "mass_kg"),
    "fee": ("price", "cost"), "daily_rate": ("rate", "price_per_day"), "runtime_min": ("runtime", "length_min"),
    "years_experience": ("experience_years",), "docks": ("dock_count", "capacity"),
    "stadium_capacity": ("capacity",), "goal": ("target", "goal_eur"), "asking_price": ("price", "list_price"),
    "room_capacity": ("capacity", "max_seats"),
    # the events' dates and numbers
    "order_date": ("ordered_on", "placed_on"), "quantity": ("qty", "units"), "enrollment_date": ("enrolled_on",),
    "grade": ("score", "mark"), "start_date": ("started_on",), "hours": ("hours_logged", "hours_worked"),
    "loan_date": ("borrowed_on", "loaned_on"), "renewals": ("renewal_count", "times_renewed"),
    "booking_date": ("booked_on",), "seats": ("seat_count", "num_seats"), "class_date": ("session_date", "held_on"),
    "rating": ("stars", "score"), "portions": ("qty", "servings"), "check_in": ("arrival_date", "checked_in"),
    "nights": ("num_nights", "night_count"), "played_on": ("play_date", "streamed_on"),
    "listened_sec": ("seconds_played", "play_seconds"), "rental_date": ("rented_on",),
    "days_kept": ("rental_days", "days_out"), "trip_date": ("started_on", "ride_date"),
    "minutes": ("duration_min", "mins"), "pick_date": ("picked_on",), "units": ("qty", "unit_count"),
    "appointment_date": ("booked_for",), "pets": ("pet_count", "num_pets"), "pickup_date": ("picked_up_on",),
    "days": ("rental_days", "num_days"), "match_date": ("played_on", "game_date"), "goals": ("goals_scored",),
    "donated_on": ("donation_date", "gift_date"), "amount": ("amount_eur", "gift_amount"),
    "viewing_date": ("viewed_on",), "interest": ("interest_score", "score"),
    "show_date": ("screening_date", "shown_on"), "visit_date": ("visited_on", "seen_on"),
}
PERSON_NAME = ("name", "full_name", "{e}_name")
GROUP_NAME = ("name", "{e}_name", "label")
RESERVED = frozenset({"order", "group", "table", "index", "check", "case", "default", "references", "transaction"})
"""SQL keywords a singular table name must not be: such a table keeps its plural."""


@dataclass(frozen=True)
class Style:
    """How one database spells its identifiers."""

    pascal: bool  # CustomerId, OrderDate (else snake_case: customer_id, order_date)
    singular: bool  # customer (else customers)
    prefix: bool  # tbl_customers / tblCustomers
    entity_keys: bool  # primary keys named customer_id (else id)
    one_line: bool  # each CREATE TABLE on one line (else a column a line)

    @property
    def label(self) -> str:
        """E.g. "snake plural id" or "pascal tbl singular entity_id one_line"."""
        return " ".join(w for w in ("pascal" if self.pascal else "snake", "tbl" if self.prefix else "",
                                    "singular" if self.singular else "plural",
                                    "entity_id" if self.entity_keys else "id", "one_line" if self.one_line else "")
                        if w)

    def column(self, snake: str) -> str:
        return "".join(w[:1].upper() + w[1:] for w in snake.split("_")) if self.pascal else snake

    def table(self, plural: str, singular: str) -> str:
        name = singular if self.singular and singular not in RESERVED else plural
        if self.pascal:
            return ("tbl" if self.prefix else "") + self.column(name)
        return ("tbl_" if self.prefix else "") + name

    def key(self, entity: str) -> str:
        return self.column(f"{entity}_id" if self.entity_keys else "id")


@dataclass(frozen=True)
class Names:
    """One database's SQL identifiers: its tables, keys and columns as its style spells them."""

    style: Style
    people: str
    groups: str
    items: str
    events: str
    person_pk: str
    group_pk: str
    item_pk: str
    event_pk: str
    person_fk: str  # the events' key to people
    group_fk: str  # the items' key to groups
    item_fk: str  # the events' key to items
    name: str  # the people's name
    city: str
    email: str
    joined: str
    group_name: str
    title: str
    amount: str
    event_date: str
    measure: str
    item_extra: str
    event_extra: str | None


def draw_names(rng: random.Random, d: Domain) -> Names:
    """A style, and per column its usual name or (half the time) a synonym, spelled in that style."""
    style = Style(pascal=rng.random() < 0.3, singular=rng.random() < 0.4, prefix=rng.random() < 0.2,
                  entity_keys=rng.random() < 0.4, one_line=rng.random() < 0.5)

    def pick(usual: str, entity: str = "", options: tuple[str, ...] | None = None) -> str:
        options = SYNONYMS.get(usual, ()) if options is None else options
        chosen = rng.choice(options) if options and rng.random() < 0.5 else usual
        return style.column(chosen.format(e=entity))

    return Names(style, style.table(d.people, d.person), style.table(d.groups, d.group),
                 style.table(d.items, d.item), style.table(d.events, d.event),
                 style.key(d.person), style.key(d.group), style.key(d.item), style.key(d.event),
                 style.column(f"{d.person}_id"), style.column(f"{d.group}_id"), style.column(f"{d.item}_id"),
                 pick("name", d.person, PERSON_NAME[1:]), pick("city"), pick("email"), pick(d.joined),
                 pick("name", d.group, GROUP_NAME[1:]), pick(d.title, d.item), pick(d.amount), pick(d.event_date),
                 pick(d.measure), pick(d.item_extra[0]), pick(d.event_extra[0]) if d.event_extra else None)


# -- the database ------------------------------------------------------------------------

@dataclass(frozen=True)
class Table:
    name: str
    ddl: str
    columns: tuple[str, ...]
    rows: tuple[tuple, ...]


def connect_tables(tables) -> sqlite3.Connection:
    """Tables (each with `ddl`, `name`, `columns`, `rows`) in a database in memory on the host,
    for trusted queries only (checking a generated question, serializing it into the task):
    candidate queries run in the sandbox."""
    con = sqlite3.connect(":memory:")
    for t in tables:
        con.execute(t.ddl)
        con.executemany(f"INSERT INTO {t.name} VALUES ({', '.join('?' * len(t.columns))})", t.rows)
    con.commit()
    return con


@dataclass(frozen=True)
class Database:
    domain: Domain
    names: Names
    tables: tuple[Table, ...]

    def rows(self, table: str) -> list[dict[str, Any]]:
        """A table's rows by its name in this database, each keyed by this database's column names."""
        t = next(t for t in self.tables if t.name == table)
        return [dict(zip(t.columns, row)) for row in t.rows]

    def connect(self) -> sqlite3.Connection:
        return connect_tables(self.tables)

    def describe(self) -> str:
        """The schema and the first three rows of each table, as the prompt shows them."""
        ddl = "\n".join(t.ddl + ";" for t in self.tables)
        samples = []
        for t in self.tables:
            lines = [f"{t.name} ({len(t.rows)} rows)", " | ".join(t.columns)]
            lines += [" | ".join("NULL" if v is None else str(v) for v in row) for row in t.rows[:3]]
            samples.append("\n".join(lines))
        return f"Schema:\n```sql\n{ddl}\n```\n\nSample rows (the first 3 of each table):\n" + "\n\n".join(samples)


def _table(rng: random.Random, style: Style, name: str, columns: list[tuple[str, str]], rows: list[tuple]) -> Table:
    """A table with its key first and, half the time, the other columns in a drawn order."""
    order = [0, *range(1, len(columns))]
    if rng.random() < 0.5:
        order[1:] = rng.sample(order[1:], len(order) - 1)
    defs = [" ".join(columns[i]) for i in order]
    body = ", ".join(defs) if style.one_line else "\n  " + ",\n  ".join(defs) + "\n"
    ddl = f"CREATE TABLE {name} ({body})"
    return Table(name, ddl, tuple(columns[i][0] for i in order), tuple(tuple(row[i] for i in order) for row in rows))


def _day(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randint(0, (end - start).days))


def make_database(rng: random.Random, domain: Domain) -> Database:
    """A database of `domain`: 5-8 groups, 20-40 items, 20-60 people, 60-200 events."""
    d, n = domain, draw_names(rng, domain)
    n_groups, n_items, n_people = rng.randint(5, 8), rng.randint(20, 40), rng.randint(20, 60)
    cities = rng.sample(CITIES, rng.randint(4, 7))

    names = rng.sample([f"{first} {last}" for first in FIRST for last in LAST], n_people)
    people = []
    for i, name in enumerate(names, 1):
        email = f"{name.lower().replace(' ', '.')}@example.com"
        people.append((i, name, rng.choice(cities), maybe_null(rng, email, 0.15),
                       _day(rng, EPOCH, date(2023, 6, 30)).isoformat()))
    people_cols = [(n.person_pk, "INTEGER PRIMARY KEY"), (n.name, "TEXT NOT NULL"), (n.city, "TEXT NOT NULL"),
                   (n.email, "TEXT"), (n.joined, "TEXT NOT NULL")]

    groups = [(i, name) for i, name in enumerate(rng.sample(d.group_names, n_groups), 1)]
    titles = rng.sample([f"{a} {b}" for a in d.title_parts[0] for b in d.title_parts[1]], n_items)
    # the first n_groups items go one to each group, so no group is empty
    items = [(i, title, i if i <= n_groups else rng.randint(1, n_groups), d.make_amount(rng), d.item_extra[2](rng))
             for i, title in enumerate(titles, 1)]
    item_cols = [(n.item_pk, "INTEGER PRIMARY KEY"), (n.title, "TEXT NOT NULL"),
                 (n.group_fk, f"INTEGER NOT NULL REFERENCES {n.groups}({n.group_pk})"),
                 (n.amount, f"{d.amount_type} NOT NULL"), (n.item_extra, d.item_extra[1])]

    active = rng.sample(people, max(1, int(n_people * rng.uniform(0.75, 0.9))))  # the rest have no events
    drawn = []
    for _ in range(rng.randint(60, 200)):
        person = rng.choice(active)
        day = _day(rng, date.fromisoformat(person[4]), END)
        extra = (d.event_extra[2](rng, day),) if d.event_extra else ()
        drawn.append((day.isoformat(), person[0], rng.randint(1, n_items), d.make_measure(rng), *extra))
    drawn.sort(key=lambda e: e[0])  # ids follow the dates, as in a real log
    events = [(i, pid, iid, day, m, *extra) for i, (day, pid, iid, m, *extra) in enumerate(drawn, 1)]
    event_cols = [(n.event_pk, "INTEGER PRIMARY KEY"),
                  (n.person_fk, f"INTEGER NOT NULL REFERENCES {n.people}({n.person_pk})"),
                  (n.item_fk, f"INTEGER NOT NULL REFERENCES {n.items}({n.item_pk})"), (n.event_date, "TEXT NOT NULL"),
                  (n.measure, "INTEGER NOT NULL")]
    event_cols += [(n.event_extra, d.event_extra[1])] if d.event_extra else []

    group_cols = [(n.group_pk, "INTEGER PRIMARY KEY"), (n.group_name, "TEXT NOT NULL UNIQUE")]
    specs = [(n.people, people_cols, people), (n.groups, group_cols, groups), (n.items, item_cols, items),
             (n.events, event_cols, events)]
    return Database(d, n, tuple(_table(rng, n.style, name, cols, rows) for name, cols, rows in specs))
