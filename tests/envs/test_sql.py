"""sql/sqlite-v1: generation (themes, naming styles, the held-out unseen split), the
verifier's comparison, the multi-turn loop, and the queries a policy might try to break the
database or the grader with."""

from __future__ import annotations

import random
import re
import sqlite3
from dataclasses import replace

import pytest

from tempering import envs
from tempering.envs.base import split_of
from tempering.envs.sql.env import SqliteEnv, generate
from tempering.envs.sql.questions import FAMILIES
from tempering.envs.sql.themes import THEMES, TRAIN_THEMES, UNSEEN_THEMES
from tempering.envs.sql.verify import extract_query, read_only_problem, run_queries, same_result, verify
from tempering.errors import TaskError
from tempering.types import Task

ENV = "sql/sqlite-v1"


@pytest.fixture(scope="module")
def sb(shared_sandbox):
    return shared_sandbox


@pytest.fixture(scope="module")
def env():
    return SqliteEnv(difficulty=5)


def sql(query: str) -> str:
    return f"Here it is:\n```sql\n{query}\n```"


def tables(task: Task) -> dict[str, list[str]]:
    """The task's tables as its database names them, in the order created (people, groups,
    items, events), each with its columns."""
    con = sqlite3.connect(":memory:")
    con.deserialize(task.reference.db)
    names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY rowid")]
    return {t: [c[1] for c in con.execute(f"PRAGMA table_info({t})")] for t in names}


def roles(task: Task) -> tuple[str, str, str, str]:
    """(people, groups, items, events): the task's table names."""
    return tuple(tables(task))


def test_check_env_passes(sb):
    report = envs.check_env(ENV, n=4)
    assert report.ok and report.checked == 12, report.problems


def test_every_family_reference_passes_and_broken_fails(sb, env):
    for family in env.families:
        task = env.task("train", 0, family)
        assert task.metadata["family"] == family and task.metadata["difficulty"] == FAMILIES[family][0]
        assert verify(task, env.reference_response(task)).passed, family
        broken = verify(task, env.broken_response(task))
        assert not broken.passed and broken.details["status"] == "wrong_result", (family, broken.details)


def test_having_needs_its_having_clause(sb, env):
    """Some city falls below the threshold, so listing every city is wrong (a query without
    HAVING once passed on databases where every city met it)."""
    for split in ("train", "test", "unseen"):
        for i in range(8):
            task = env.task(split, i, "having")
            city, people = re.search(r"SELECT (\S+) FROM (\S+) GROUP BY", task.reference.query).groups()
            result = verify(task, sql(f"SELECT {city} FROM {people} GROUP BY {city};"))
            assert not result.passed and result.details["status"] == "wrong_result", (split, i, result.details)


def test_tasks_are_deterministic_and_differ_by_index(env):
    a, b = env.task("train", 7), SqliteEnv(difficulty=5).task("train", 7)
    assert a == b and a.reference.db == b.reference.db
    assert env.task("train", 8).prompt != a.prompt


def test_splits_are_disjoint(env):
    train = {t.prompt[0].content for t in env.tasks("train", 30)}
    test = {t.prompt[0].content for t in env.tasks("test", 15)}
    assert len(train) == 30 and len(test) == 15 and not train & test
    assert {split_of(p) for p in test} == {"test"} and {split_of(p) for p in train} == {"train"}


@pytest.fixture(scope="module")
def drawn(env):
    """300 train, 100 test and 100 unseen tasks."""
    return {split: env.tasks(split, n) for split, n in (("train", 300), ("test", 100), ("unseen", 100))}


def test_unseen_split_holds_out_whole_themes(drawn):
    assert len(UNSEEN_THEMES) >= 4 and set(UNSEEN_THEMES) <= set(THEMES) and len(THEMES) >= 16
    assert not set(TRAIN_THEMES) & set(UNSEEN_THEMES)
    seen = {t.metadata["schema"] for t in drawn["train"] + drawn["test"]}
    unseen = {t.metadata["schema"] for t in drawn["unseen"]}
    assert seen <= set(TRAIN_THEMES) and unseen == set(UNSEEN_THEMES)
    assert {t.id.split("/")[2] for t in drawn["unseen"]} == {"unseen"}


def test_no_unseen_table_is_a_training_table(drawn):
    def words(keys):  # every table name a theme could give, plural or singular
        return {w for k in keys for d in [THEMES[k]]
                for w in (d.people, d.person, d.groups, d.group, d.items, d.item, d.events, d.event)}

    assert not words(TRAIN_THEMES) & words(UNSEEN_THEMES)
    seen = {frozenset(tables(t)) for t in drawn["train"] + drawn["test"]}
    assert not {frozenset(tables(t)) for t in drawn["unseen"]} & seen


def test_train_varies_themes_naming_and_wording(drawn):
    train = drawn["train"]
    assert len({t.metadata["schema"] for t in train}) >= 12
    assert len({t.metadata["naming"] for t in train}) >= 2
    keys = {next(iter(tables(t).values()))[0] for t in train}  # the people's primary key
    assert "id" in keys and len(keys) > 2
    openings = {t.prompt[0].content.split("Question: ")[1].split()[0] for t in train if t.family == "count_city"}
    assert len(openings) >= 2, openings


@pytest.mark.parametrize("theme", list(THEMES))
def test_every_family_poses_on_every_theme(theme):
    for family in FAMILIES:
        task = generate(random.Random(f"{theme}|{family}"), family, tuple(FAMILIES), (theme,))
        assert task.metadata["schema"] == theme and task.family == family


def test_unseen_reference_passes_and_broken_fails(sb, env):
    for i, family in enumerate(("count_city", "in_group", "top_groups", "above_group_avg", "within_days")):
        task = env.task("unseen", i, family)
        assert task.metadata["schema"] in UNSEEN_THEMES
        assert verify(task, env.reference_response(task)).value == 1.0, task.reference.query
        broken = verify(task, env.broken_response(task))
        assert not broken.passed and broken.details["status"] == "wrong_result", (family, broken.details)


def test_prompt_shows_schema_samples_and_question(env):
    task = env.task("test", 0, "top_groups")
    text, (_, _, items, events) = task.prompt[0].content, roles(task)
    assert f"CREATE TABLE {events} (" in text and f"REFERENCES {items}({tables(task)[items][0]})" in text
    assert "Sample rows" in text and "```sql code block" in text
    assert task.metadata["ordered"] is True and env.task("test", 0, "per_city").metadata["ordered"] is False


def test_difficulty_restricts_families():
    easy = envs.make(ENV, difficulty=1)
    assert set(easy.families) == {f for f, (level, _) in FAMILIES.items() if level == 1}
    assert {t.metadata["difficulty"] for t in easy.tasks("train", 12)} == {1}
    assert max(t.metadata["difficulty"] for t in envs.make(ENV, difficulty=5).tasks("train", 40)) > 3
    with pytest.raises(TaskError, match="no task family 'never'"):
        easy.task("train", 0, "never")
    for bad in (0, 6, 2.5):
        with pytest.raises(TaskError, match="difficulty must be"):
            SqliteEnv(difficulty=bad)


def test_wrong_query_scores_below_correct(sb, env):
    task = env.task("train", 3, "count_city")
    people = roles(task)[0]
    good = verify(task, sql(task.reference.query.replace("COUNT(*)", f"count({tables(task)[people][0]})")))
    wrong = verify(task, sql(f"SELECT COUNT(*) FROM {people};"))
    assert good.passed and good.value == 1.0 and good.details["format_ok"]
    assert wrong.value == 0.0 and wrong.details["status"] == "wrong_result"
    # the feedback shows what the query returned, never the reference's result
    ref_count = run_queries(task.reference.db, [task.reference.query])[0]["rows"][0][0]
    shown = wrong.details["feedback"].splitlines()
    assert "returned 1 row(s)" in wrong.details["feedback"] and str(ref_count) not in shown


def test_sql_error_is_fed_back_and_a_second_answer_can_win(sb):
    env = envs.make(ENV, max_turns=3, turn_cost=0.1)
    task = env.task("test", 2)
    env.reset(task)
    first = env.step(sql(f"SELECT no_such_column FROM {roles(task)[0]}"))
    assert not first.terminated and first.reward == 0.0 and first.info["status"] == "sql_error"
    assert "no such column: no_such_column" in first.messages[0].content and "reply 2 of 3" in first.messages[0].content
    second = env.step(env.reference_response(task))
    assert second.terminated and second.info["passed"] and second.reward == pytest.approx(0.9)


def test_last_turn_ends_the_episode_with_zero(sb):
    env = envs.make(ENV, max_turns=2)
    task = env.task("train", 4)
    env.reset(task)
    assert not env.step("no idea").terminated
    last = env.step("SELECT 1")
    assert last.terminated and last.reward == 0.0 and last.info["status"] == "wrong_result"


def test_order_counts_only_when_the_task_asks_for_one(sb, env):
    assert same_result([[1, "a"], [2.0000001, None]], [[2, None], [1.0, "a"]], ordered=False)
    assert not same_result([[1, "a"], [2, None]], [[2, None], [1, "a"]], ordered=True)
    assert not same_result([[1]], [[1], [1]], ordered=False) and not same_result([[1.5]], [[1.51]], ordered=False)
    assert not same_result([[1, 2]], [[1]], ordered=False)

    task = env.task("train", 1, "group_avg")
    reversed_ = sql(f"SELECT * FROM ({task.reference.query.rstrip(';')}) ORDER BY 2 ASC, 1 DESC")
    assert verify(task, reversed_).details["status"] == "wrong_result"
    unordered = replace(task, reference=replace(task.reference, ordered=False))
    assert verify(unordered, reversed_).passed

    task = env.task("train", 1, "per_city")
    city, people = re.match(r"SELECT (\w+), COUNT\(\*\) FROM (\w+)", task.reference.query).groups()
    renamed = sql(f"SELECT {city} AS c, COUNT(*) AS how_many FROM {people} GROUP BY {city} ORDER BY 2 DESC, 1 DESC")
    assert verify(task, renamed).passed


def test_extract_query():
    assert extract_query("```sql\nSELECT 1\n```\nbetter:\n```sql\nSELECT 2;\n```") == ("SELECT 2;", True)
    assert extract_query("```python\nprint(1)\n```\n```\nSELECT 3\n```") == ("SELECT 3", False)
    assert extract_query("The answer is:\nSELECT name\nFROM t;\nDone.") == ("SELECT name\nFROM t", False)
    assert extract_query("I don't know.") == (None, False)


def test_static_check_sees_through_strings_and_comments():
    assert read_only_problem("SELECT 'a; DROP TABLE x', \"delete\" FROM t -- update later\n;") is None
    assert read_only_problem("SELECT replace(name, 'a', 'b') FROM t WHERE note = 'INSERT INTO'") is None
    assert read_only_problem("WITH x AS (SELECT 1) DELETE FROM t") == "it uses DELETE"
    assert read_only_problem("SELECT 1; SELECT 2") == "it holds more than one statement"
    assert "not SELECT" in read_only_problem("PRAGMA table_info(t)")


HOSTILE = {  # query template -> status
    "DELETE FROM {people}": "not_read_only",
    "UPDATE {items} SET {column} = 'x'": "not_read_only",
    "ATTACH DATABASE '/workspace/other.db' AS other": "not_read_only",
    "SELECT 1; DROP TABLE {people}": "not_read_only",
    "SELECT load_extension('/tmp/evil.so')": "not_read_only",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT max(n) FROM r": "timeout",
    "SELECT COUNT(*) FROM {events} a, {events} b, {events} c, {events} d, {events} e": "timeout",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT n FROM r": "too_large",
    "SELECT randomblob(500000)": "sql_error",
}


@pytest.mark.parametrize("template", list(HOSTILE))
def test_hostile_query_scores_zero_quickly(sb, env, template):
    task = env.task("train", 0, "count_city")
    people, _, items, events = roles(task)
    query = template.format(people=people, items=items, column=tables(task)[items][1], events=events)
    score = verify(task, sql(query))
    # "timeout" is the sandbox's limit ending the query: the proof it was cut, at any speed
    assert score.value == 0.0 and not score.passed and score.details["status"] == HOSTILE[template], score.details
    assert score.details["feedback"].endswith("```sql code block.")


def test_sandbox_alone_keeps_the_database_read_only(sb, env):
    """Past the static check, the run itself refuses writes: later queries in the same run
    still see every row."""
    task = env.task("train", 0, "count_city")
    people = roles(task)[0]
    writes = [f"DELETE FROM {people}", f"DROP TABLE {people}", "ATTACH DATABASE 'x.db' AS x",
              "PRAGMA query_only = OFF", "CREATE TEMP TABLE t(a)", "SELECT load_extension('x')", "VACUUM"]
    results = run_queries(task.reference.db, writes + [f"SELECT COUNT(*) FROM {people}"])
    assert [r["status"] for r in results[:-1]] == ["not_read_only"] * len(writes), results
    shown = re.search(rf"^{people} \((\d+) rows\)$", task.prompt[0].content, re.M)
    assert results[-1]["rows"] == [[int(shown.group(1))]]
    assert verify(task, env.reference_response(task)).passed


def test_bad_task_data_scores_zero_with_a_clear_status(sb, env):
    task = env.task("train", 0, "count_city")
    not_a_problem = verify(replace(task, reference="SELECT 1"), "```sql\nSELECT 1\n```")
    assert not_a_problem.value == 0.0 and not_a_problem.details["status"] == "bad_task"
    assert "SqlProblem" in not_a_problem.details["feedback"]
    for problem in (replace(task.reference, query="SELECT nope FROM nowhere"),
                    replace(task.reference, db=b"not a database")):
        score = verify(replace(task, reference=problem), "```sql\nSELECT 1\n```")
        assert score.value == 0.0 and score.details["status"] == "bad_task", score.details


# -- the held-back check: a second instance of the database

def _literal_answer(task: Task) -> str | None:
    """The hack a second instance is for: the first instance's answer as literals."""
    con = sqlite3.connect(":memory:")
    con.deserialize(task.reference.db)
    rows = con.execute(task.reference.query).fetchall()
    con.close()
    if not rows or len(rows) > 50:
        return None
    return sql(" UNION ALL ".join("SELECT " + ", ".join("NULL" if v is None else repr(v) for v in r) for r in rows))


def test_second_instance_keeps_schema_and_keys_and_changes_the_data(env):
    from tempering.envs.sql.verify import second_instance

    task = env.task("train", 3)
    first, again = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    first.deserialize(task.reference.db)
    again.deserialize(second_instance(task.reference.db, task.id))
    schema = "SELECT name, sql FROM sqlite_master ORDER BY name"
    assert first.execute(schema).fetchall() == again.execute(schema).fetchall()
    changed = 0
    for (name,) in first.execute("SELECT name FROM sqlite_master WHERE type = 'table'"):
        a, b = (c.execute(f'SELECT * FROM "{name}" ORDER BY rowid').fetchall() for c in (first, again))
        assert len(b) == len(a) - len(a) // 4 and set(b) != set(a) or len(a) < 2
        changed += set(b) != set(a)
    assert changed > 0
    assert second_instance(task.reference.db, task.id) == second_instance(task.reference.db, task.id)  # seeded


def test_strong_verify_passes_the_reference_and_catches_a_literal_answer(env, sb):
    passed_weak = caught = 0
    for task in env.tasks("train", 20):
        assert env.strong_verify(task, env.reference_response(task)).passed
        hack = _literal_answer(task)
        if hack is not None and verify(task, hack).passed:
            passed_weak += 1
            caught += not env.strong_verify(task, hack).passed
    # measured on these 20 tasks (the generator is seeded): the literal passes the reward on
    # every one it can be written for, and the second instance fails it on most
    assert passed_weak >= 15 and caught >= 0.8 * passed_weak, (passed_weak, caught)


def test_heldback_rescoring_flags_the_literal_answer(env, sb):
    from tempering.envs.heldback import HeldBack

    checked = HeldBack(env, 1.0)
    task = next(t for t in env.tasks("train", 20) if _literal_answer(t) and
                verify(t, _literal_answer(t)).passed and not env.strong_verify(t, _literal_answer(t)).passed)
    score = checked.verify(task, _literal_answer(task))
    assert score.passed and score.details["heldback"]["strong_passed"] is False
    honest = checked.verify(task, env.reference_response(task))
    assert honest.details["heldback"]["strong_passed"] is True
