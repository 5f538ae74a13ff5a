"""Question families across foreign keys: one join, a two-join path, LEFT JOIN with zero
counts, anti-joins, correlated subqueries and line totals.

A family picks a `Link` (child.fk -> parent) from the schema, so the join it needs is the one
the prompt's REFERENCES clause declares; the broken queries join on the wrong column, drop a
LEFT JOIN's zero rows or compare against the wrong average. A foreign key with a meaning of its
own (a launch site, a white player) is named by it ("whose launch site's name is ...").
"""

from __future__ import annotations

import random
from collections import Counter

from tempering.envs.sql.shapes.ask import Posed, an, pick, say, shown, ties, title, value
from tempering.envs.sql.shapes.build import Database, Link


def _links(db: Database, labelled_child: bool = False, keyed_child: bool = False) -> list[Link]:
    """Links between two tables (no self-references) whose parent has a name column."""
    return [link for link in db.links() if not link.self_ref and link.parent.label is not None
            and (not labelled_child or link.child.label is not None) and (not keyed_child or link.child.pk)]


def _counts(link: Link) -> Counter:
    """Children per parent key."""
    return Counter(v for v in link.child.values(link.fk.name) if v is not None)


def _whose(link: Link, x) -> str:
    return f"whose {link.fk.said}'s {link.parent.label.said} is {shown(x)}"


def join_filter(rng: random.Random, db: Database) -> Posed | None:
    link = pick(rng, _links(db, keyed_child=True))
    if link is None:
        return None
    c, p, fk = link.child, link.parent, link.fk
    used = _counts(link)
    x = rng.choice(sorted(lbl for key, lbl in zip(p.values(p.pk.name), p.values(p.label.name)) if used[key]))
    join = f"FROM {c.name} c\nJOIN {p.name} p ON p.{p.pk.name} = c.{{}}\nWHERE p.{p.label.name} = {value(x)};"
    if c.label is not None:
        text = say(rng, f"Which {c.plural} have {an(fk.said)} named {shown(x)}? Give their {c.label.said}.",
                   f"List the {c.label.said} of every {c.noun} {_whose(link, x)}.",
                   f"{title(c.plural)} {_whose(link, x)}: {c.label.said}.")
        head = f"SELECT c.{c.label.name}\n"
    else:
        text = say(rng, f"How many {c.plural} have {an(fk.said)} named {shown(x)}?",
                   f"Count the {c.plural} {_whose(link, x)}.", f"Number of {c.plural} {_whose(link, x)}.")
        head = "SELECT COUNT(*)\n"
    return Posed(text, head + join.format(fk.name), head + join.format(c.pk.name), mentions=(p.label,))


def join_count(rng: random.Random, db: Database) -> Posed | None:
    link = pick(rng, _links(db))
    if link is None or len(_counts(link)) == len(link.parent.rows):
        return None  # every parent has children: an inner join would be right too
    c, p, fk = link.child, link.parent, link.fk
    has = f"{c.plural} that have it as their {fk.said}" if fk.ref else f"{c.plural} it has"
    ask = f"{c.plural} have it as their {fk.said}" if fk.ref else f"{c.plural} does it have"
    text = say(rng, f"For each {p.noun}, how many {ask}? Include {p.plural} with none. Return the {p.label.said} "
               f"and the count.", f"Count, for every {p.noun}, the {has}, listing {p.plural} with none as 0: return "
               f"the {p.label.said} and the count.", f"Per {p.noun}: the {p.label.said} and the number of {has}, "
               f"zeros included.")
    query = (f"SELECT p.{p.label.name}, COUNT(c.{fk.name})\nFROM {p.name} p\n{{}} {c.name} c ON c.{fk.name} = "
             f"p.{p.pk.name}\nGROUP BY p.{p.pk.name};")
    return Posed(text, query.format("LEFT JOIN"), query.format("JOIN"), mentions=(p.label,))


def parent_having(rng: random.Random, db: Database) -> Posed | None:
    link = pick(rng, _links(db))
    if link is None:
        return None
    c, p, fk = link.child, link.parent, link.fk
    counts = _counts(link)
    ks = sorted({n for n in counts.values() if min(counts.values()) <= n < max(counts.values())})
    if not ks:
        return None
    k = rng.choice(ks)  # some parent has exactly k: `>=` would list it
    more = f"are the {fk.said} of more than {k} {c.plural}" if fk.ref else f"have more than {k} {c.plural}"
    text = say(rng, f"Which {p.plural} {more}? Give their {p.label.said}.",
               f"List the {p.label.said} of the {p.plural} that {more}.", f"{title(p.plural)} that {more}.")
    query = (f"SELECT p.{p.label.name}\nFROM {p.name} p\nJOIN {c.name} c ON c.{fk.name} = p.{p.pk.name}\n"
             f"GROUP BY p.{p.pk.name}\nHAVING COUNT(*) {{}} {k};")
    return Posed(text, query.format(">"), query.format(">="), mentions=(p.label,))


def join_top(rng: random.Random, db: Database) -> Posed | None:
    link = pick(rng, [link for link in _links(db) if link.child.of("num")])
    if link is None:
        return None
    c, p, fk = link.child, link.parent, link.fk
    n, k = rng.choice(c.of("num")), rng.choice((3, 4))
    if len(_counts(link)) <= k:
        return None
    of = f"the {c.plural} with it as {fk.said}" if fk.ref else f"their {c.plural}"
    total, agg = ("total", "SUM") if n.concept.additive else ("average", "AVG")
    answer = f"the {p.label.said} and that {total} rounded to 2 decimal places, highest first; {ties(p.label)}"
    text = say(rng, f"Which {k} {p.plural} have the highest {total} {n.said} over {of}? Return {answer}.",
               f"Rank the {p.plural} by the {total} {n.said} of {of} and return the top {k}: {answer}.",
               f"Top {k} {p.plural} by {total} {n.said} of {of}: {answer}.")
    query = (f"SELECT p.{p.label.name}, ROUND({agg}(c.{n.name}), 2) AS total\nFROM {c.name} c\n"
             f"JOIN {p.name} p ON p.{p.pk.name} = c.{fk.name}\nGROUP BY p.{p.pk.name}\n"
             f"ORDER BY total {{}}, p.{p.label.name}\nLIMIT {k};")
    return Posed(text, query.format("DESC"), query.format("ASC"), True, (n, p.label))


def _paths(db: Database) -> list[tuple[Link, Link]]:
    """(leaf -> mid, mid -> top) pairs over three different tables, the top one named."""
    return [(a, b) for a in db.links() for b in _links(db)
            if not a.self_ref and b.child is a.parent and len({a.child.name, a.parent.name, b.parent.name}) == 3]


def path_total(rng: random.Random, db: Database) -> Posed | None:
    path = pick(rng, _paths(db))
    if path is None:
        return None
    (low, high), n = path, None
    leaf, mid, top = low.child, low.parent, high.parent
    if leaf.of("num") and rng.random() < 0.7:
        n = rng.choice(leaf.of("num"))
        total, agg = ("total", "SUM") if n.concept.additive else ("average", "AVG")
        what, agg = f"the {total} {n.said} of the {leaf.plural}", f"ROUND({agg}(l.{n.name}), 2)"
    else:
        what, agg = f"the number of {leaf.plural}", "COUNT(*)"
    answer = f"Return the {top.label.said} and that value, highest first; {ties(top.label)}."
    text = say(rng, f"For each {top.noun}, what is {what} of its {mid.plural}? {answer}",
               f"Compute, per {top.noun}, {what} recorded against its {mid.plural}. {answer}",
               f"{title(what)} per {top.noun}, through its {mid.plural}. {answer}")
    query = (f"SELECT t.{top.label.name}, {agg} AS total\nFROM {leaf.name} l\n"
             f"JOIN {mid.name} m ON m.{mid.pk.name} = l.{low.fk.name}\nJOIN {top.name} t ON t.{top.pk.name} = "
             f"m.{{}}\nGROUP BY t.{top.pk.name}\nORDER BY total DESC, t.{top.label.name};")
    mentions = (top.label,) + ((n,) if n else ())
    return Posed(text, query.format(high.fk.name), query.format(mid.pk.name), True, mentions)


def path_filter(rng: random.Random, db: Database) -> Posed | None:
    path = pick(rng, _paths(db))
    if path is None:
        return None
    low, high = path
    leaf, mid, top = low.child, low.parent, high.parent
    x = rng.choice(sorted(top.values(top.label.name)))
    text = say(rng, f"How many {leaf.plural} are there for the {mid.plural} of the {top.noun} {shown(x)}?",
               f"Count the {leaf.plural} recorded against {mid.plural} whose {high.fk.said}'s {top.label.said} is "
               f"{shown(x)}.", f"{title(leaf.plural)} under {top.noun} {shown(x)} (through its {mid.plural}): "
               f"how many?")
    query = (f"SELECT COUNT(*)\nFROM {leaf.name} l\nJOIN {mid.name} m ON m.{mid.pk.name} = l.{low.fk.name}\n"
             f"JOIN {top.name} t ON t.{top.pk.name} = m.{{}}\nWHERE t.{top.label.name} = {value(x)};")
    return Posed(text, query.format(high.fk.name), query.format(mid.pk.name), mentions=(top.label,))


def above_parent_avg(rng: random.Random, db: Database) -> Posed | None:
    link = pick(rng, [link for link in _links(db, labelled_child=True) if link.child.of("num")])
    if link is None:
        return None
    c, fk = link.child, link.fk
    n = rng.choice(c.of("num"))
    text = say(rng, f"Which {c.plural} have {an(n.said)} above the average {n.said} of the {c.plural} with the same "
               f"{fk.said}? Give their {c.label.said}.", f"List the {c.label.said} of every {c.noun} whose {n.said} "
               f"is higher than the average for its own {fk.said}.", f"{title(c.plural)} above their {fk.said}'s "
               f"average {n.said}: {c.label.said}.")
    query = (f"SELECT c.{c.label.name}\nFROM {c.name} c\nWHERE c.{n.name} > (SELECT AVG(x.{n.name}) FROM {c.name} x"
             f"{{}});")
    return Posed(text, query.format(f" WHERE x.{fk.name} = c.{fk.name}"), query.format(""), mentions=(n, c.label))


def anti_join(rng: random.Random, db: Database) -> Posed | None:
    link = pick(rng, _links(db))
    if link is None or len(_counts(link)) == len(link.parent.rows):
        return None
    c, p, fk = link.child, link.parent, link.fk
    other = c.pk or next((o for o in c.of("fk") if o is not fk), None)
    if other is None:
        return None
    never = f"are never the {fk.said} of any {c.noun}" if fk.ref else f"have no {c.plural} at all"
    text = say(rng, f"Which {p.plural} {never}? Give their {p.label.said}.",
               f"List the {p.label.said} of the {p.plural} that {never}.", f"{title(p.plural)} that {never}.")
    return Posed(text, f"SELECT p.{p.label.name}\nFROM {p.name} p\nWHERE NOT EXISTS (SELECT 1 FROM {c.name} c WHERE "
                 f"c.{fk.name} = p.{p.pk.name});", f"SELECT p.{p.label.name}\nFROM {p.name} p\nWHERE p.{p.pk.name} "
                 f"NOT IN (SELECT c.{other.name} FROM {c.name} c);", mentions=(p.label,))


def lines_total(rng: random.Random, db: Database) -> Posed | None:
    links = [link for link in db.links() if not link.self_ref and _priced(link.child)]
    link = pick(rng, links)
    if link is None:
        return None
    c, p = link.child, link.parent
    qty, price = _priced(c)
    key, k = p.label or p.pk, rng.choice((3, 4, 5))
    order = "A to Z" if p.label else "lowest first"
    answer = (f"Return the {key.said} and the total rounded to 2 decimal places, largest first; break ties by "
              f"{key.said} ({order}).")
    value_of = f"where {an(c.noun)}'s value is its {qty.said} times its {price.said}"
    text = say(rng, f"Which {k} {p.plural} have the largest total value of {c.plural}, {value_of}? {answer}",
               f"Find the {k} {p.plural} whose {c.plural} add up to the most, {value_of}. {answer}",
               f"Top {k} {p.plural} by total {c.noun} value ({qty.said} x {price.said}). {answer}")
    query = (f"SELECT p.{key.name}, ROUND(SUM({{}}), 2) AS total\nFROM {c.name} c\n"
             f"JOIN {p.name} p ON p.{p.pk.name} = c.{link.fk.name}\nGROUP BY p.{p.pk.name}\n"
             f"ORDER BY total DESC, p.{key.name}\nLIMIT {k};")
    return Posed(text, query.format(f"c.{qty.name} * c.{price.name}"), query.format(f"c.{price.name}"), True,
                 (qty, price) + ((key,) if p.label else ()))


def _priced(t):
    """(quantity, unit price) columns of a table that has both, else None."""
    roles = {c.concept.role: c for c in t.columns if c.concept is not None and c.concept.role}
    return (roles["qty"], roles["price"]) if {"qty", "price"} <= set(roles) else None
