"""sql/handwritten-v1: the hand-written set is far from the generator (no table of a theme, a
prompt in the generator's frame), every question's reference passes and its wrong query fails
in the sandbox, and no training split exists to draw it."""

from __future__ import annotations

import re

import pytest

from tempering import envs
from tempering.envs.sql.handwritten import ENV_ID, load_tasks
from tempering.envs.sql.themes import THEMES
from tempering.errors import TaskError


def _table_names(task) -> set[str]:
    ddl = task.prompt[0].content.split("```sql", 1)[1].split("```", 1)[0]
    return {n.strip('"').lower() for n in re.findall(r"CREATE TABLE\s+(?:IF NOT EXISTS\s+)?(\"?\w+\"?)", ddl, re.I)}


def _generator_tables() -> set[str]:
    """Every table name a generator theme can produce, as its plural and singular entity nouns."""
    return {v.lower() for d in THEMES.values() for v in (d.people, d.person, d.groups, d.group, d.items, d.item,
                                                        d.events, d.event)}


def test_every_reference_passes_and_every_wrong_query_fails(shared_sandbox):
    env = envs.make(ENV_ID, max_turns=1)
    tasks = env.tasks("test", env.size("test"))
    assert len(tasks) == 90 and len({t.id for t in tasks}) == 90
    for t in tasks:
        good, bad = env.verify(t, env.reference_response(t)), env.verify(t, env.broken_response(t))
        assert good.passed and good.value == 1.0, (t.id, good)
        assert not bad.passed, (t.id, bad)


def test_six_databases_none_of_whose_tables_a_generator_theme_has():
    tasks = load_tasks()
    schemas = {t.metadata["schema"] for t in tasks}
    assert len(schemas) == 6
    assert not schemas & set(THEMES)
    generated = _generator_tables()
    for t in tasks:
        assert t.prompt[0].content.startswith("Here is an SQLite database of ")
        assert "Question: " in t.prompt[0].content and t.prompt[0].content.endswith("```sql code block.")
        names = _table_names(t)
        assert 4 <= len(names) <= 7
        assert not {n.removeprefix("tbl_") for n in names} & generated, (t.id, names & generated)


def test_it_is_evaluation_data_only():
    env = envs.make(ENV_ID)
    assert env.splits == ("test",) and env.size("train") == 0
    with pytest.raises(TaskError, match="only split is 'test'.*train on sql/sqlite-v1"):
        env.task("train", 0)
    with pytest.raises(TaskError, match="index 90 is out of range"):
        env.task("test", 90)
