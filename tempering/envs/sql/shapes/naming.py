"""How one database spells its identifiers: a `Style` (the split unit) and the details drawn
per database around it (`Naming`).

Styles, each a convention real schemas use:

    snake      customer_name, opened_on, customer_id           (train)
    abbrev     cust_nm, opnd_dt, qty, cust_no                  (train)
    camel      customerName, openedOn, customerId/customerID   (train)
    pascal     CustomerName, OpenedOn, CustomerID              (train)
    upper      CUST_NM, OPENED_ON, CUSTOMER_ID                 (train)
    hungarian  strCustomerName, dtOpenedOn, intQty, bActive    (train)
    concat     custname, openeddt, custno (Oracle's classic)   (unseen only)
    coded      cst_name, cst_opened_on, ord_cst_id             (unseen only: every column carries
                                                                its table's short code)

Per database, whatever the style: plural or singular table names, primary keys named `id` or
after their table, SQLite's type names or ANSI ones (VARCHAR(40), DECIMAL(10,2), DATE,
BOOLEAN), one line per table or one per column, and foreign keys inline (`REFERENCES`) or as
FOREIGN KEY clauses at the end.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ABBR = {
    "account": "acct", "address": "addr", "amount": "amt", "average": "avg", "balance": "bal", "branch": "brnch",
    "capacity": "cap", "category": "cat", "code": "cd", "count": "cnt", "created": "crtd", "customer": "cust",
    "date": "dt", "delivery": "dlvry", "department": "dept", "deposit": "dep", "description": "descr",
    "distance": "dist", "duration": "dur", "employee": "emp", "estimated": "est", "first": "frst", "hours": "hrs",
    "invoice": "inv", "last": "lst", "level": "lvl", "location": "loc", "manager": "mgr", "maximum": "max",
    "member": "mbr", "message": "msg", "minimum": "min", "minutes": "mins", "name": "nm", "number": "num",
    "opened": "opnd", "percent": "pct", "phone": "ph", "price": "prc", "product": "prod", "purchase": "purch",
    "quantity": "qty", "rating": "rtg", "reference": "ref", "region": "rgn", "registered": "reg",
    "salary": "sal", "score": "scr", "service": "svc", "status": "stat", "supplier": "supp", "temperature": "temp",
    "total": "tot", "type": "typ", "value": "val", "vehicle": "veh", "volume": "vol", "weight": "wt",
    "warehouse": "whse", "technician": "tech", "kilograms": "kg", "litres": "ltr",
    "kilometres": "km", "received": "rcvd", "shipped": "shpd", "started": "strtd", "finished": "fin",
}
RESERVED = frozenset(
    "abort action add after all alter analyze and as asc attach autoincrement before begin between by cascade case "
    "cast check collate column commit conflict constraint create cross current database default deferred delete desc "
    "detach distinct do drop each else end escape except exclude exists explain fail filter first following for "
    "foreign from full generated glob group groups having if ignore immediate in index indexed initially inner insert "
    "instead intersect into is isnull join key last left like limit match natural no not nothing notnull null nulls "
    "of offset on or order others over partition plan pragma preceding primary query raise range recursive "
    "references regexp reindex release rename replace restrict returning right rollback row rows savepoint select "
    "set table temp temporary then ties to transaction trigger unbounded union unique update using vacuum values "
    "view virtual when where window with without date time".split())
"""SQL keywords (and SQLite's date/time functions): never a whole identifier."""


@dataclass(frozen=True)
class Style:
    key: str
    case: str  # snake | camel | pascal | upper | concat
    abbrev: bool  # ABBR applied to every word it has
    hungarian: bool  # type prefixes on columns
    coded: bool  # each column carries its table's code
    suffixes: tuple[str, ...]  # how key names end: "id", "ID" (glued, camel/pascal), "no"
    bare_pk: bool  # a primary key may be named just `id`


STYLES = {s.key: s for s in (
    Style("snake", "snake", False, False, False, ("id",), True),
    Style("abbrev", "snake", True, False, False, ("id", "no"), True),
    Style("camel", "camel", False, False, False, ("id", "ID"), True),
    Style("pascal", "pascal", False, False, False, ("id", "ID"), True),
    Style("upper", "upper", True, False, False, ("id", "no"), True),
    Style("hungarian", "camel", False, True, False, ("id", "ID"), False),
    Style("concat", "concat", True, False, False, ("no", "id"), False),
    Style("coded", "snake", False, False, True, ("id",), False),
)}
TRAIN_STYLES = ("snake", "abbrev", "camel", "pascal", "upper", "hungarian")
UNSEEN_STYLES = ("concat", "coded")


IRREGULAR = {"staff": "staff", "person": "people", "produce": "produce", "goods": "goods", "media": "media"}


def plural(word: str) -> str:
    if word in IRREGULAR:
        return IRREGULAR[word]
    if word.endswith("y") and word[-2:-1] not in "aeiou":
        return word[:-1] + "ies"
    return word + ("es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def _hungarian(kind: str, real: bool) -> str:
    return {"num": "flt" if real else "int", "date": "dt", "flag": "b", "key": "int"}.get(kind, "str")


@dataclass(frozen=True)
class Naming:
    """One database's spelling: its style plus the details drawn for it."""

    style: Style
    plural: bool
    bare_pk: bool
    suffix: str
    tbl: bool  # Hungarian tables: tblCustomer
    ansi: bool
    one_line: bool
    fk_at_end: bool

    @property
    def label(self) -> str:
        """E.g. "camel plural id-pk ansi": what metadata["naming"] records."""
        return " ".join([self.style.key, "plural" if self.plural else "singular", "id-pk" if self.bare_pk else
                         "named-pk", f"suffix-{self.suffix}", "ansi" if self.ansi else "sqlite"])

    def words(self, spelling: str) -> list[str]:
        ws = spelling.split()
        return [ABBR.get(w, w) for w in ws] if self.style.abbrev else ws

    def join(self, words: list[str]) -> str:
        case = self.style.case
        if case == "snake":
            return "_".join(w.lower() for w in words)
        if case == "upper":
            return "_".join(w.upper() for w in words)
        if case == "concat":
            return "".join(w.lower() for w in words)
        cap = "".join(w[:1].upper() + w[1:].lower() for w in words)
        return cap[:1].lower() + cap[1:] if case == "camel" else cap

    def _keyed(self, words: list[str]) -> str:
        if self.suffix == "ID" and self.style.case in ("camel", "pascal"):
            return self.join(words) + "ID"
        return self.join(words + [self.suffix])

    def table(self, spelling: str) -> str:
        ws = self.words(spelling)
        if self.plural and ws[-1] == spelling.split()[-1]:  # an abbreviated word stays singular
            ws = ws[:-1] + [plural(ws[-1])]
        if self.style.hungarian:
            name = ("tbl" if self.tbl else "") + "".join(w[:1].upper() + w[1:] for w in ws)
        else:
            name = self.join(ws)
        return safe(name)

    def column(self, spelling: str, kind: str, real: bool, code: str) -> str:
        ws = self.words(spelling)
        if self.style.coded:
            return safe(self.join([code] + ws))
        if self.style.hungarian:
            return _hungarian(kind, real) + "".join(w[:1].upper() + w[1:] for w in ws)
        return safe(self.join(ws))

    def pk(self, table_spelling: str, code: str) -> str:
        if self.style.coded:
            return self.join([code, "id"])
        if self.bare_pk:
            return {"upper": "ID", "pascal": "Id" if self.suffix == "id" else "ID"}.get(self.style.case, "id")
        ws = self.words(table_spelling)
        return ("int" + self._keyed(ws)[:1].upper() + self._keyed(ws)[1:]) if self.style.hungarian else self._keyed(ws)

    def fk(self, ref_spelling: str, code: str) -> str:
        ws = self.words(ref_spelling)
        if self.style.coded:
            return self.join([code] + ws + ["id"])
        name = self._keyed(ws)
        return "int" + name[:1].upper() + name[1:] if self.style.hungarian else name

    def type(self, kind: str, real: bool) -> str:
        if not self.ansi:
            return {"num": "REAL" if real else "INTEGER", "flag": "INTEGER", "key": "INTEGER"}.get(kind, "TEXT")
        return {"num": "DECIMAL(10,2)" if real else "INT", "flag": "BOOLEAN", "key": "INT", "date": "DATE",
                "cat": "VARCHAR(20)", "label": "VARCHAR(60)"}.get(kind, "VARCHAR(80)")


def safe(name: str) -> str:
    """`name`, or `name` + "s" where it is a whole SQL keyword ("order", "end")."""
    return name + ("S" if name.isupper() else "s") if name.lower() in RESERVED else name


def draw_naming(rng: random.Random, style_key: str) -> Naming:
    s = STYLES[style_key]
    return Naming(s, plural=rng.random() < 0.5, bare_pk=s.bare_pk and rng.random() < 0.4,
                  suffix=rng.choice(s.suffixes), tbl=s.hungarian and rng.random() < 0.5, ansi=rng.random() < 0.4,
                  one_line=rng.random() < 0.3, fk_at_end=rng.random() < 0.3)


def table_code(spelling: str, taken: set[str]) -> str:
    """A short code for the `coded` style: the first letter and the next two consonants
    (customer -> cst), made unique within the database."""
    word = spelling.replace(" ", "")
    code = (word[0] + "".join(c for c in word[1:] if c not in "aeiou"))[:3].ljust(3, word[-1])
    base, n = code, 2
    while code in taken:
        code, n = f"{base}{n}", n + 1
    taken.add(code)
    return code
