"""Scoring an SQL answer: take the query out of the reply, turn away anything but one
read-only statement, run the reference and the candidate against a fresh copy of the task's
database in the sandbox, and compare the results.

The static check exists for clear statuses; the guarantee is the run. The candidate's query
never runs on the host. In the sandbox the copy is opened read-only (`mode=ro` and `PRAGMA
query_only`), an authorizer allows reads and functions only (not load_extension), a progress
handler stops a query after QUERY_SECONDS, a value may hold at most 100 kB and a result
MAX_ROWS rows or MAX_BYTES of JSON, and the sandbox's own limits end whatever those miss.

Results match when they hold the same rows, as multisets unless the task asks for an order;
column names are ignored and numbers compared to 6 decimal places (3 equals 3.0).

Statuses: passed, wrong_result, no_query, not_read_only (the static check or the run refused
it), sql_error, timeout, too_large (rows, bytes or memory), bad_task (the task's own data or
reference query is broken), sandbox_error.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass, field

from tempering.sandbox.limits import Limits
from tempering.types import Score, Task

QUERY_SECONDS = 2.0
MAX_ROWS = 1000
MAX_BYTES = 1_000_000
LIMITS = Limits(wall_s=6, cpu_s=6, memory_mb=512, output_bytes=4 * MAX_BYTES, disk_mb=64)
ASK = "Reply with the corrected query in one ```sql code block."


@dataclass(frozen=True)
class SqlProblem:
    """A task's reference: the database (SQLite file bytes), the reference query, whether
    row order counts, and a plausible wrong query (`broken_response`)."""

    query: str
    broken: str
    ordered: bool
    db: bytes = field(repr=False)

    def __str__(self) -> str:  # what eval logs show as the reference
        return self.query


# -- finding the query -------------------------------------------------------------------

_FENCE = re.compile(r"```[ \t]*([\w+-]*)[ \t]*\n(.*?)```", re.S)
_BARE = re.compile(r"^[ \t]*((?:SELECT|WITH)\b.*?)(?:;|\n[ \t]*\n|\Z)", re.S | re.I | re.M)


def extract_query(reply: str) -> tuple[str | None, bool]:
    """(the query, whether the reply used a ```sql block): the last ```sql block, else the last
    unlabelled block, else the last statement starting a line with SELECT or WITH."""
    blocks = [(lang.lower(), body.strip()) for lang, body in _FENCE.findall(reply) if body.strip()]
    for wanted, format_ok in ((("sql", "sqlite"), True), (("",), False)):
        found = [body for lang, body in blocks if lang in wanted]
        if found:
            return found[-1], format_ok
    bare = _BARE.findall(reply)
    return (bare[-1].strip(), False) if bare else (None, False)


_OPAQUE = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|`[^`]*`|\[[^\]]*\]|--[^\n]*|/\*.*?(?:\*/|\Z)", re.S)
_WRITES = re.compile(r"\b(ATTACH|DETACH|INSERT|UPDATE|DELETE|REPLACE\s+INTO|DROP|CREATE|ALTER|PRAGMA|VACUUM|REINDEX"
                     r"|ANALYZE|LOAD_EXTENSION)\b", re.I)


def read_only_problem(query: str) -> str | None:
    """Why `query` is not a single read-only statement, or None. Strings, quoted names and
    comments are blanked first, so `WHERE note = 'a; DROP'` is fine."""
    body = re.sub(r"[\s;]+$", "", _OPAQUE.sub(lambda m: " " if m.group()[:2] in ("--", "/*") else " x ", query))
    if not body.strip():
        return "it is empty"
    if ";" in body:
        return "it holds more than one statement"
    if re.match(r"[\s(]*(\w*)", body).group(1).upper() not in ("SELECT", "WITH", "VALUES"):
        return f"it starts with {body.split()[0][:20]!r}, not SELECT or WITH"
    write = _WRITES.search(body)
    return f"it uses {' '.join(write.group(1).upper().split())}" if write else None


# -- running it --------------------------------------------------------------------------

RUNNER = r'''
import json, sqlite3, time

job = json.load(open("job.json"))
ALLOWED = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_FUNCTION, sqlite3.SQLITE_RECURSIVE}


def authorize(action, arg1, arg2, db_name, source):
    if action == sqlite3.SQLITE_FUNCTION and (arg2 or "").lower() == "load_extension":
        return sqlite3.SQLITE_DENY
    return sqlite3.SQLITE_OK if action in ALLOWED else sqlite3.SQLITE_DENY


def run(sql):
    con = sqlite3.connect("file:db.sqlite?mode=ro", uri=True)
    con.execute("PRAGMA query_only = ON")
    con.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100_000)
    con.set_authorizer(authorize)
    deadline = time.monotonic() + job["seconds"]
    con.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    try:
        cur = con.execute(sql)
        columns, rows, size = [c[0] for c in cur.description or ()], [], 0
        for row in cur:
            row = [v.hex() if isinstance(v, bytes) else v for v in row]
            size += len(json.dumps(row))
            if len(rows) == job["max_rows"] or size > job["max_bytes"]:
                return {"status": "too_large",
                        "error": f"the result has more than {job['max_rows']} rows or {job['max_bytes']} bytes"}
            rows.append(row)
        return {"status": "ok", "columns": columns, "rows": rows}
    except sqlite3.Error as e:
        text = str(e)
        status = ("timeout" if text == "interrupted" else
                  "not_read_only" if "authoriz" in text or "readonly" in text else "sql_error")
        return {"status": status, "error": text}
    finally:
        con.close()


for sql in job["queries"]:
    print(json.dumps(run(sql)), flush=True)
'''
_RUN_STATUS = {"timeout": "timeout", "memory": "too_large", "output_limit": "too_large"}


def run_queries(db: bytes, queries: list[str], sandbox=None) -> list[dict]:
    """Run each query, in order, against one read-only copy of `db` in the sandbox. Each
    result is {"status": "ok", "columns", "rows"} or {"status", "error"}; a query the run
    never finished gets the run's status (a timeout, memory, a sandbox failure)."""
    if sandbox is None:
        from tempering.sandbox import shared_sandbox

        sandbox = shared_sandbox()
    job = {"queries": queries, "seconds": QUERY_SECONDS, "max_rows": MAX_ROWS, "max_bytes": MAX_BYTES}
    r = sandbox.run(RUNNER, files={"db.sqlite": db, "job.json": json.dumps(job)}, limits=LIMITS)
    results = []
    for line in r.stdout.splitlines()[: len(queries)]:
        try:
            results.append(json.loads(line))
        except ValueError:
            break
    lost = {"status": _RUN_STATUS.get(r.status, "sandbox_error"),
            "error": r.detail or r.stderr.strip()[-500:] or f"the run ended with status {r.status}"}
    return results + [lost] * (len(queries) - len(results))


# -- comparing ---------------------------------------------------------------------------

def _value(v):
    if isinstance(v, float) and math.isfinite(v):
        v = round(v, 6)
        return int(v) if v.is_integer() else v
    return v


def same_result(expected: list, got: list, ordered: bool) -> bool:
    """Equal rows (lists of values), in order when `ordered`, else as multisets."""
    a, b = ([tuple(map(_value, row)) for row in rows] for rows in (expected, got))
    return a == b if ordered else Counter(a) == Counter(b)


def _show(columns: list[str], rows: list, limit: int = 5) -> str:
    cell = lambda v: "NULL" if v is None else str(v)  # noqa: E731
    lines = [" | ".join(columns)] + [" | ".join(map(cell, row)) for row in rows[:limit]]
    return "\n".join(lines) + (f"\n... ({len(rows) - limit} more)" if len(rows) > limit else "")


# -- the verdict -------------------------------------------------------------------------

def verify(task: Task, response: str) -> Score:
    """1.0 when the reply's query returns the reference query's result, else 0.0;
    details: status (see above), feedback (what the model is told next), extracted,
    format_ok."""
    problem = task.reference
    if not isinstance(problem, SqlProblem):
        return _fail({}, "bad_task", f"task {task.id!r} has no SqlProblem as its reference (got "
                                     f"{type(problem).__name__}): build tasks with env.task()")
    query, format_ok = extract_query(response)
    details = {"extracted": query, "format_ok": format_ok}
    if query is None:
        return _fail(details, "no_query", "I found no SQL query in your reply. Reply with one SQLite SELECT query "
                                          "in a ```sql code block.")
    problem_text = read_only_problem(query)
    if problem_text:
        return _fail(details, "not_read_only", f"Your query was not run: {problem_text}. Only one read-only "
                                               f"statement (SELECT, or WITH ... SELECT) is allowed. {ASK}")
    ref, got = run_queries(problem.db, [problem.query, query])
    if ref["status"] != "ok":  # the run itself failing is no fault of the task
        return _fail(details, "sandbox_error" if ref["status"] == "sandbox_error" else "bad_task",
                     f"The task could not be checked: its reference query failed ({ref['status']}: {ref['error']}).")
    status = got["status"]
    if status == "ok" and same_result(ref["rows"], got["rows"], problem.ordered):
        return Score(1.0, True, {**details, "status": "passed", "rows": len(got["rows"])})
    return _fail({**details, **({"rows": len(got["rows"])} if status == "ok" else {"error": got["error"]})},
                 "wrong_result" if status == "ok" else status, _feedback(got))


def _feedback(got: dict) -> str:
    """What a failed query is told: its error, or what it returned (never the answer's rows)."""
    status = got["status"]
    if status == "ok":
        return (f"Your query ran, but its result is not the answer. It returned {len(got['rows'])} row(s):\n"
                f"{_show(got['columns'], got['rows'])}\nCheck the question again. {ASK}")
    if status == "sql_error":
        return f"Your query failed with an SQLite error: {got['error']}\n{ASK}"
    if status == "not_read_only":
        return f"Your query was stopped: {got['error']}. Only reading the database is allowed. {ASK}"
    if status == "timeout":
        return f"Your query ran longer than {QUERY_SECONDS:g} s and was stopped. {ASK}"
    if status == "too_large":
        return f"Your query's result was too large: {got['error']}. {ASK}"
    return f"Your query could not be checked ({status}: {got['error']}). {ASK}"


def _fail(details: dict, status: str, feedback: str) -> Score:
    return Score(0.0, False, {**details, "status": status, "feedback": feedback})


# -- the held-back check: a second instance of the database ------------------------------

def second_instance(db: bytes, seed: str) -> bytes:
    """The task's database with the same schema and keys but other data: within each table,
    every column that is neither a primary key nor a foreign key has its values permuted
    across the rows, and a quarter of the rows are left out (seeded by `seed`). Types and
    uniqueness survive; which row holds which value, and how many rows there are, do not, so
    a query that only reproduces the first instance's answer (a literal, a row picked by
    position) gives the wrong rows here while the reference query's logic still applies."""
    import random
    import sqlite3

    rng = random.Random(seed)
    con = sqlite3.connect(":memory:")
    try:
        con.deserialize(db)
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' "
                                            "AND name NOT LIKE 'sqlite_%' ORDER BY name")]
        for table in tables:
            q = table.replace('"', '""')
            keys = {r[3] for r in con.execute(f'PRAGMA foreign_key_list("{q}")')}
            info = list(con.execute(f'PRAGMA table_info("{q}")'))
            names = ", ".join('"' + r[1].replace('"', '""') + '"' for r in info)
            rows = [list(r) for r in con.execute(f'SELECT rowid, {names} FROM "{q}" ORDER BY rowid')]
            for i, r in enumerate(info, start=1):
                if not r[5] and r[1] not in keys:  # neither a primary nor a foreign key
                    column = [row[i] for row in rows]
                    rng.shuffle(column)
                    for row, v in zip(rows, column):
                        row[i] = v
            # and a quarter of the rows left out, so counts and totals move too
            drop = set(rng.sample(range(len(rows)), len(rows) // 4))
            rows = [row for k, row in enumerate(rows) if k not in drop]
            # rewritten whole, not row by row: a permuted UNIQUE column collides mid-way
            con.execute(f'DELETE FROM "{q}"')
            marks = ", ".join("?" * (len(info) + 1))
            con.executemany(f'INSERT INTO "{q}" (rowid, {names}) VALUES ({marks})', rows)
        con.commit()
        return con.serialize()
    finally:
        con.close()


def strong_verify(task: Task, response: str) -> Score:
    """The reply's query against the reference on a second instance of the database
    (`second_instance`): the env's held-back check (envs/heldback.py). When the reference
    itself fails there, the second instance says nothing and the first verdict stands."""
    problem = task.reference
    if not isinstance(problem, SqlProblem):
        return verify(task, response)
    from dataclasses import replace

    again = replace(task, reference=replace(problem, db=second_instance(problem.db, task.id)))
    score = verify(again, response)
    if (score.details or {}).get("status") in ("bad_task", "sandbox_error"):
        return verify(task, response)
    return score
