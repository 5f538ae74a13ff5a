"""`sql/handwritten-v1`: SQL questions written by hand over databases no generator makes.

`sql/sqlite-v1` holds out whole themes in its `unseen` split, but its questions, table shapes
and naming styles come from the same templates as training. This set does not: six databases
written by hand (handwritten.json), each in a domain none of the generator's themes covers,
with 4 to 7 tables (junction tables, self-references, composite keys, NULLs), a naming
convention the generator never uses (abbreviated, camelCase, UPPER_SNAKE, prefixed...), and
fifteen questions each worded as a person would ask them, naming columns in other words than
their names. It measures whether SQL training transferred beyond the templates.

The prompt has the generator's frame (the same instruction, the schema as it was written, the
first three rows of each table), so a model that learned the answer format is not penalised for
that; everything inside the frame is new. Grading is `sql/sqlite-v1`'s: the reply's result set
against the reference query's, read-only in the sandbox; a wrong reply gets the same feedback.
Fixed evaluation data: its only split is `test`, so no training run can draw it.
"""

from __future__ import annotations

import json
import sqlite3
from functools import lru_cache
from pathlib import Path

from tempering.envs.feedback import FeedbackEnv
from tempering.envs.sql.env import INSTRUCTION
from tempering.envs.sql.verify import SqlProblem, verify
from tempering.errors import TaskError
from tempering.types import Message, Task

ENV_ID = "sql/handwritten-v1"
DATA = Path(__file__).with_name("handwritten.json")


@lru_cache(maxsize=1)
def load_tasks() -> tuple[Task, ...]:
    """Every question of every database, in file order, each with its database built."""
    data = json.loads(DATA.read_text())
    tasks = []
    for db in data["databases"]:
        con = sqlite3.connect(":memory:")
        try:
            con.executescript(db["script"])
            frame = f"Here is an SQLite database of {db['about']}.\n\n{describe(con)}\n\n"
            blob = con.serialize()
        finally:
            con.close()
        for q in db["questions"]:
            prompt = f"{frame}Question: {q['text']}\n\n{INSTRUCTION}"
            tasks.append(Task(id=f"{ENV_ID}/{q['id']}", domain="sql", prompt=(Message("user", prompt),),
                              reference=SqlProblem(q["query"], q["broken"], bool(q["ordered"]), blob),
                              metadata={"family": q["skill"], "schema": db["key"], "ordered": bool(q["ordered"])}))
    return tuple(tasks)


def describe(con: sqlite3.Connection) -> str:
    """The schema as written and the first three rows of each table (sql/sqlite-v1's layout)."""
    tables = con.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid").fetchall()
    ddl = "\n".join(sql + ";" for _, sql in tables)
    samples = []
    for name, _ in tables:
        cur = con.execute(f'SELECT * FROM "{name}" LIMIT 3')
        count = con.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0]
        lines = [f"{name} ({count} rows)", " | ".join(d[0] for d in cur.description)]
        lines += [" | ".join("NULL" if v is None else str(v) for v in row) for row in cur.fetchall()]
        samples.append("\n".join(lines))
    return f"Schema:\n```sql\n{ddl}\n```\n\nSample rows (the first 3 of each table):\n" + "\n\n".join(samples)


def _no_generator(rng, family):
    raise TaskError(f"{ENV_ID} is evaluation data written by hand: its only split is 'test' (train on sql/sqlite-v1)")


class HandwrittenSqlEnv(FeedbackEnv):
    """Options: `max_turns` (replies per episode, the verdict between them; 1 is single-turn)."""

    concurrent_verify = True

    def __init__(self, max_turns: int = 3, turn_cost: float = 0.0) -> None:
        super().__init__(ENV_ID, _no_generator, verify, lambda t: f"```sql\n{t.reference.query}\n```",
                         tuple(sorted({t.metadata["family"] for t in load_tasks()})), max_turns, turn_cost)
        self.splits = ("test",)

    def size(self, split: str) -> int:
        return len(load_tasks()) if split == "test" else 0

    def task(self, split: str, index: int, family: str | None = None) -> Task:
        if split != "test":
            raise TaskError(f"{ENV_ID} is evaluation data written by hand: its only split is 'test' "
                            "(train on sql/sqlite-v1)")
        tasks = load_tasks() if family is None else tuple(t for t in load_tasks() if t.metadata["family"] == family)
        if not 0 <= index < len(tasks):
            raise TaskError(f"{ENV_ID} has {len(tasks)} questions{' of ' + family if family else ''}; "
                            f"index {index} is out of range")
        return tasks[index]

    def tasks(self, split: str, n: int, start: int = 0) -> list[Task]:
        return [self.task(split, i) for i in range(start, min(start + n, self.size(split)))]

    def broken_response(self, task: Task) -> str:
        return f"```sql\n{task.reference.broken}\n```"
