"""sql/sqlite-v1: answer a question about a generated SQLite database with one query.

Each task is a fresh database of one theme (shop, hotel, warehouse...; see themes.py) with
its own naming style, column synonyms and column order (schemas.py), and a question from one
of eighteen families of difficulty 1 to 5, worded in one of its paraphrases (questions.py).
The prompt shows the schema and three rows per table; the reply is one query in a ```sql
block, scored 1.0 when its result equals the reference query's (verify.py). A wrong reply
gets back what went wrong (the SQLite error, or the first rows its query returned, never the
answer's) and may try again, up to `max_turns` replies.

Splits: train and test draw from TRAIN_THEMES (split by a hash of the prompt); `unseen`
draws only from UNSEEN_THEMES, whole schemas neither of the others ever shows, so it
measures SQL beyond the schemas trained on. Every task's metadata names its theme
("schema") and naming style ("naming").

Generation runs the reference and the broken query on the host (both are ours) and redraws
until the reference returns something besides NULL or 0 and the broken query returns
something else, so `broken_response` fails on every task.
"""

from __future__ import annotations

import random
import sqlite3

from tempering.envs.feedback import FeedbackEnv
from tempering.envs.sql.questions import FAMILIES, MAX_LEVEL, Question
from tempering.envs.sql.schemas import make_database
from tempering.envs.sql.themes import THEMES, TRAIN_THEMES, UNSEEN_THEMES
from tempering.envs.sql.verify import SqlProblem, same_result, strong_verify, verify
from tempering.errors import TaskError
from tempering.types import Message, Score, Task

ENV_ID = "sql/sqlite-v1"
INSTRUCTION = ("Write one SQLite query that answers the question: a single SELECT (or WITH ... SELECT) statement "
               "that returns exactly the columns asked for, in the order asked for. Reply with the query in a "
               "```sql code block.")


def _well_posed(con: sqlite3.Connection, q: Question) -> bool:
    expected = con.execute(q.query).fetchall()
    informative = any(v not in (None, 0) for row in expected for v in row)
    return informative and not same_result(expected, con.execute(q.broken).fetchall(), q.ordered)


def generate(rng: random.Random, family: str | None, families: tuple[str, ...], themes: tuple[str, ...]) -> Task:
    """A task of `family` (else one of `families`) on a database of one of `themes`."""
    if family is None:
        family = rng.choice(families)
    level, pose = FAMILIES[family]
    for _ in range(20):
        db = make_database(rng, THEMES[rng.choice(themes)])
        con = db.connect()
        try:
            for _ in range(5):
                q = pose(rng, db)
                if q is not None and _well_posed(con, q):
                    prompt = (f"Here is an SQLite database of {db.domain.about}.\n\n{db.describe()}\n\n"
                              f"Question: {q.text}\n\n{INSTRUCTION}")
                    return Task(id="", domain="sql", prompt=(Message("user", prompt),),
                                reference=SqlProblem(q.query, q.broken, q.ordered, con.serialize()),
                                metadata={"family": family, "difficulty": level, "ordered": q.ordered,
                                          "schema": db.domain.key, "naming": db.names.style.label})
        finally:
            con.close()
    raise TaskError(f"{ENV_ID}: family {family!r} posed no well-posed question on 20 databases; its generator "
                    f"in tempering/envs/sql/questions.py is broken")


def reference_response(task: Task) -> str:
    return f"```sql\n{task.reference.query}\n```"


class SqlEnv(FeedbackEnv):
    """What every generated SQL env shares: a reference query and a broken one per task, and
    the held-back check."""

    concurrent_verify = True

    def broken_response(self, task: Task) -> str:
        return f"```sql\n{task.reference.broken}\n```"

    def strong_verify(self, task: Task, response: str) -> Score:
        """The held-back check (env.heldback): the same query on a second instance of the
        database, the same schema and keys with each other column's values permuted."""
        return strong_verify(task, response)


class SqliteEnv(SqlEnv):
    """`sql/sqlite-v1`, with splits train, test and unseen (held-out themes). Options:
    `difficulty` (the highest family level drawn, 1 to 5), `max_turns` (replies per episode;
    1 makes it single-turn), `turn_cost` (reward taken off per reply after the first)."""

    def __init__(self, difficulty: int = 5, max_turns: int = 3, turn_cost: float = 0.0) -> None:
        if not isinstance(difficulty, int) or not 1 <= difficulty <= MAX_LEVEL:
            raise TaskError(f"{ENV_ID}: difficulty must be an integer from 1 to {MAX_LEVEL}, got {difficulty!r}")
        families = tuple(f for f, (level, _) in FAMILIES.items() if level <= difficulty)
        super().__init__(ENV_ID, lambda rng, family: generate(rng, family, families, TRAIN_THEMES), verify,
                         reference_response, families, max_turns, turn_cost,
                         unseen=lambda rng, family: generate(rng, family, families, UNSEEN_THEMES))
        self.difficulty = difficulty

