"""sql/shapes-v1: one SQLite query over a database of one of ten shapes, spelled in one of
eight naming styles, in one of 26 domains: a generator written apart from sql/sqlite-v1's
four-table template, so a model must read each schema rather than recall one.

A task is a fresh database (build.py) and a question from one of 32 families (families.py)
of difficulty 1 to 5. The prompt is sql/sqlite-v1's frame (the same instruction, the schema
as CREATE TABLE statements with their REFERENCES, the first rows of each table), so the reply
format a model learned there carries over; grading, feedback between turns (`max_turns`) and
the held-back second-instance check are sql/sqlite-v1's (verify.py).

Splits:
- `train` and `test` (1 in 10 prompts, by a hash of the prompt) draw the six training shapes
  (chain, star, junction, selfref, wide, lines), their 18 domains (domains_train.py) and six
  naming styles (snake, abbrev, camel, pascal, upper, hungarian).
- `unseen` holds out all three: only the shapes snowflake, dual, threaded and bom, only their
  8 domains (domains_unseen.py: no entity noun or table spelling of a training domain), and
  only the naming styles concat (Oracle's `empno`/`hiredate`) and coded (`cst_name`). Every
  family poses on some unseen shape, so `unseen` measures each skill beyond what was trained.

Generation runs the reference and the broken query on the host (both are ours) and redraws
until the reference returns something besides NULL or 0 and the broken query returns
something else, so `broken_response` fails on every task. Prompts stay under MAX_CHARS
(about 900 SmolLM2 tokens): a long schema shows fewer sample rows.
"""

from __future__ import annotations

import random
import sqlite3

from tempering.envs.sql.env import INSTRUCTION, SqlEnv
from tempering.envs.sql.shapes.ask import Posed
from tempering.envs.sql.shapes.build import Database, build
from tempering.envs.sql.shapes.domains_train import TRAIN_DOMAINS
from tempering.envs.sql.shapes.domains_unseen import UNSEEN_DOMAINS
from tempering.envs.sql.shapes.families import FAMILIES, MAX_LEVEL
from tempering.envs.sql.shapes.naming import TRAIN_STYLES, UNSEEN_STYLES, draw_naming
from tempering.envs.sql.verify import SqlProblem, same_result, verify
from tempering.errors import TaskError
from tempering.types import Message, Task

ENV_ID = "sql/shapes-v1"
MAX_CHARS = 2000
"""A prompt's ceiling in characters: at most about 900 SmolLM2 tokens, as UPPER_CASE schemas
tokenize at 2.2 characters a token (the others nearer 2.6)."""
DATABASES = 40
"""Databases a task draws before giving up: enough to meet every domain twice."""


def _well_posed(con: sqlite3.Connection, q: Posed) -> bool:
    expected = con.execute(q.query).fetchall()
    informative = any(v not in (None, 0) for row in expected for v in row)
    return informative and not same_result(expected, con.execute(q.broken).fetchall(), q.ordered)


def prompt_text(db: Database, question: str) -> str:
    """sql/sqlite-v1's frame around this database and question, with 3 sample rows a table,
    or fewer where that would pass MAX_CHARS."""
    for samples in (3, 2, 1):
        text = f"Here is an SQLite database of {db.domain.about}.\n\n{db.describe(samples)}\n\n" \
               f"Question: {question}\n\n{INSTRUCTION}"
        if len(text) <= MAX_CHARS:
            break
    return text


def generate(rng: random.Random, family: str | None, families: tuple[str, ...], domains: dict,
             styles: tuple[str, ...]) -> Task:
    """A task of `family` (else one of `families`) on a database of one of `domains`, spelled
    in one of `styles`. Domains are tried in a drawn order, so a family that fits few shapes
    still meets them."""
    if family is None:
        family = rng.choice(families)
    level, pose = FAMILIES[family]
    order = rng.sample(sorted(domains), len(domains))
    for attempt in range(DATABASES):
        db = build(rng, domains[order[attempt % len(order)]], draw_naming(rng, rng.choice(styles)))
        con = db.connect()
        try:
            for _ in range(5):
                q = pose(rng, db)
                if q is not None and _well_posed(con, q):
                    return _task(db, con, q, family, level)
        finally:
            con.close()
    raise TaskError(f"{ENV_ID}: family {family!r} posed no well-posed question on {DATABASES} databases of "
                    f"{', '.join(sorted(domains))}; its generator in tempering/envs/sql/shapes/ is broken")


def _task(db: Database, con: sqlite3.Connection, q: Posed, family: str, level: int) -> Task:
    mentions = [[c.name, c.said, bool(c.concept and c.concept.renamed)] for c in q.mentions]
    return Task(id="", domain="sql", prompt=(Message("user", prompt_text(db, q.text)),),
                reference=SqlProblem(q.query, q.broken, q.ordered, con.serialize()),
                metadata={"family": family, "difficulty": level, "ordered": q.ordered, "schema": db.domain.key,
                          "shape": db.domain.shape, "style": db.naming.style.key, "naming": db.naming.label,
                          "mentions": mentions})


def reference_response(task: Task) -> str:
    return f"```sql\n{task.reference.query}\n```"


class ShapesEnv(SqlEnv):
    """`sql/shapes-v1`, with splits train, test and unseen (held-out shapes, styles and
    vocabularies). Options: `difficulty` (the highest family level drawn, 1 to 5), `max_turns`
    (replies per episode; 1 makes it single-turn), `turn_cost` (reward taken off per reply
    after the first)."""

    def __init__(self, difficulty: int = 5, max_turns: int = 3, turn_cost: float = 0.0) -> None:
        if not isinstance(difficulty, int) or not 1 <= difficulty <= MAX_LEVEL:
            raise TaskError(f"{ENV_ID}: difficulty must be an integer from 1 to {MAX_LEVEL}, got {difficulty!r}")
        families = tuple(f for f, (level, _) in FAMILIES.items() if level <= difficulty)
        super().__init__(ENV_ID, lambda rng, fam: generate(rng, fam, families, TRAIN_DOMAINS, TRAIN_STYLES),
                         verify, reference_response, families, max_turns, turn_cost,
                         unseen=lambda rng, fam: generate(rng, fam, families, UNSEEN_DOMAINS, UNSEEN_STYLES))
        self.difficulty = difficulty

