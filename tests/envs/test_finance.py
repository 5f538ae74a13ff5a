import csv
import io
import re
from dataclasses import replace

import pytest

from tempering import envs
from tempering.envs.finance import FILINGS_ID, STATEMENTS_ID, FilingsEnv, StatementsEnv
from tempering.envs.finance.document import build_document, target_chars
from tempering.envs.finance.envs import answer_line, parse_tool_call
from tempering.envs.finance.filing import STATEMENTS, inconsistencies
from tempering.envs.finance.layout import (EXPENSES, NAMINGS, STYLES, TRAIN_NAMINGS, TRAIN_STYLES, UNIT_PLACES,
                                           UNSEEN_LAYOUTS)
from tempering.envs.finance.questions import FAMILIES
from tempering.envs.finance.render import INSTRUCTION, table, unit_label
from tempering.errors import TaskError


@pytest.fixture(scope="module")
def env():
    return StatementsEnv()


@pytest.fixture(scope="module")
def long_env():
    return FilingsEnv()


@pytest.mark.parametrize("env_id", [STATEMENTS_ID, FILINGS_ID])
def test_check_env_passes(env_id):
    report = envs.check_env(env_id, n=10)
    assert report.ok, report.problems
    assert report.checked == 30  # train, test and unseen
    assert env_id in envs.list_envs()


def test_every_family_grades_its_reference_and_rejects_its_mistake(env):
    levels = set()
    for family in env.families:
        for i in range(4):
            task = env.task("train", i, family)
            assert task.metadata["family"] == family
            assert env.verify(task, env.reference_response(task)).value == 1.0, (family, i)
            broken = env.verify(task, env.broken_response(task))
            assert not broken.passed and broken.value < 1.0, (family, i, env.broken_response(task))
            assert env.verify(task, "").value == 0.0
        levels.add(task.metadata["difficulty"])
    assert len(env.families) >= 10 and levels == {1, 2, 3, 4, 5}


def test_statements_tie_out_except_planted_imbalances(env):
    planted = 0
    for family in env.families:
        for i in range(6):
            f = env.task("train", i, family).reference.filing
            problems = inconsistencies(f)
            if f.planted:
                planted += 1
                assert any("total liabilities and equity" in p for p in problems), f.planted
                continue
            assert problems == [], (family, i, problems)
            for year in f.years:
                v = {k: per_year[year] for k, per_year in f.values.items()}
                assert v["total_assets"] == v["total_liabilities"] + v["total_equity"]
                assert v["cash_end"] == v["cash"]
                expenses = v["cogs"] + v["sga"] + v["rnd"] + v["da"] + v["interest"] + v["tax"]
                assert v["net_income"] == v["revenue"] - expenses
    assert planted > 0


def test_planted_imbalance_is_the_cited_difference(env):
    seen = {True: 0, False: 0}
    for i in range(30):
        task = env.task("train", i, "balance_check")
        f, gold = task.reference.filing, task.reference.gold
        year = int(gold.question.split("end of FY")[1][:4])
        difference = f.values["total_assets"][year] - f.values["total_le"][year]
        assert gold.verdict == (difference == 0) and gold.value == abs(difference)
        seen[gold.verdict] += 1
    assert seen[True] and seen[False]


def test_covenant_verdict_follows_the_ratio(env):
    seen = set()
    for i in range(20):
        task = env.task("train", i, "covenant")
        f, gold = task.reference.filing, task.reference.gold
        y = f.latest
        ebitda = f.values["operating_income"][y] + f.values["da"][y] + f.restructuring
        ratio = (f.values["short_debt"][y] + f.values["long_debt"][y]) / ebitda
        assert gold.value == pytest.approx(ratio) and gold.verdict == (ratio > f.covenant_max)
        assert f"{f.covenant_max:.2f}x" in task.prompt[0].content
        seen.add(gold.verdict)
    assert seen == {True, False}


def test_restated_question_needs_the_restated_figure(env):
    task = env.task("train", 0, "restated_growth")
    f, gold = task.reference.filing, task.reference.gold
    r = f.restatement
    assert f"{f.layout.label('revenue').lower()} revised to {r.revenue:,}" in task.prompt[0].content
    assert gold.value == pytest.approx((f.values["revenue"][r.year + 1] / r.revenue - 1) * 100)
    unrestated = (f.values["revenue"][r.year + 1] / f.values["revenue"][r.year] - 1) * 100
    assert env.verify(task, answer_line(gold, unrestated)).value == 0.0
    assert env.verify(task, env.reference_response(task)).value == 1.0


def test_csv_attachments_hold_the_table_figures(env):
    task = next(t for t in (env.task("train", i) for i in range(60)) if t.reference.filing.csv)
    f = task.reference.filing
    assert "```csv" in task.prompt[0].content
    rows = list(csv.reader(io.StringIO(task.metadata["attachments"]["balance_sheet.csv"])))
    years = f.layout.columns(f.years)
    assert rows[0] == ["line_item"] + [f.layout.column(y) for y in years]
    total = next(r for r in rows if r[0] == f.layout.label("total_assets"))
    assert [int(x) for x in total[1:]] == [f.values["total_assets"][y] for y in years]


def test_tasks_are_deterministic_and_distinct(env):
    assert env.task("test", 3) == StatementsEnv().task("test", 3)
    assert env.task("train", 3, "growth") == env.task("train", 3, "growth")
    prompts = {env.task("train", i).prompt for i in range(30)}
    assert len(prompts) == 30
    assert not prompts & {env.task("test", i).prompt for i in range(10)}


def test_difficulty_limits_families_and_grows_the_long_report():
    assert StatementsEnv(difficulty=1).families == ("lookup",)
    two = envs.make(STATEMENTS_ID, difficulty=2, max_turns=2)
    assert all(FAMILIES[f][0] <= 2 for f in two.families) and "covenant" not in two.families and two.max_turns == 2
    with pytest.raises(TaskError):
        StatementsEnv(difficulty=6)
    long_env = FilingsEnv()
    easy, hard = long_env.task("train", 0, "lookup"), long_env.task("train", 0, "covenant")
    easy_len = len(build_document(easy.reference, 1))
    hard_len = len(build_document(hard.reference, 5))
    assert target_chars(1) <= easy_len < target_chars(5) <= hard_len


# -- layouts and the unseen split --------------------------------------------------------------
HELD_OUT = {"/".join(combo) for combo in UNSEEN_LAYOUTS}


@pytest.mark.parametrize("make", [StatementsEnv, FilingsEnv])
def test_unseen_split_holds_out_whole_layouts(make):
    env = make()
    train = [env.task("train", i) for i in range(200)]
    seen = train + [env.task("test", i) for i in range(50)]
    unseen = [env.task("unseen", i) for i in range(50)]
    assert all(t.metadata["layout"] == t.reference.filing.layout.name for t in seen + unseen)
    assert not HELD_OUT & {t.metadata["layout"] for t in seen}
    assert {t.metadata["layout"] for t in unseen} == HELD_OUT
    seen_layouts = [t.reference.filing.layout for t in seen]
    assert {lay.style for lay in seen_layouts} == set(TRAIN_STYLES) and "columns" not in TRAIN_STYLES
    assert {lay.naming for lay in seen_layouts} == set(TRAIN_NAMINGS) and "ifrs" not in TRAIN_NAMINGS
    train_layouts = [t.reference.filing.layout for t in train]
    assert len({lay.naming for lay in train_layouts}) >= 4 and len({lay.style for lay in train_layouts}) >= 3
    assert {t.reference.filing.scale for t in train} == {"ones", "thousands", "millions"}
    for tasks in (train, unseen):  # the details vary in every split
        layouts = [t.reference.filing.layout for t in tasks]
        assert {lay.newest_first for lay in layouts} == {True, False}
        assert {lay.negatives for lay in layouts} == {"parens", "minus"}
        assert {lay.unit_place for lay in layouts} == set(UNIT_PLACES)
        assert len({lay.year_format for lay in layouts}) >= 3


def test_unseen_references_pass_and_mistakes_fail(env):
    for family in env.families:
        for i in range(2):
            task = env.task("unseen", i, family)
            assert task.metadata["layout"] in HELD_OUT
            assert env.verify(task, env.reference_response(task)).value == 1.0, (family, i)
            broken = env.verify(task, env.broken_response(task))
            assert not broken.passed and broken.value < 1.0, (family, i, env.broken_response(task))


def _row(text: str, label: str) -> list[str]:
    """The cells after `label` on the line that starts with it and holds only figures after it."""
    for line in text.splitlines():
        line = line.lstrip("| *")
        if line.startswith(label):
            cells = [c.strip("*") for c in re.split(r"[\s|]+", line[len(label):].strip(" |*.")) if c]
            if cells and all(re.fullmatch(r"\(?-?[\d,]+\)?|—|-", c) for c in cells):
                return cells
    raise AssertionError(f"no row {label!r} in\n{text}")


@pytest.mark.parametrize("style", STYLES)
@pytest.mark.parametrize("naming", sorted(NAMINGS))
def test_every_table_style_reads_back_as_the_figures(env, style, naming):
    f = env.task("train", 1, "covenant").reference.filing
    assert 0 in f.values["share_issuance"].values()  # a zero to read back
    for newest_first, negatives, zero, year_format in ((False, "parens", "-", "Fiscal {y}"), (True, "minus", "0", "FY{yy}")):
        lay = replace(f.layout, style=style, naming=naming, newest_first=newest_first, negatives=negatives, zero=zero,
                      year_format=year_format)
        g = replace(f, layout=lay)
        years = lay.columns(g.years)
        for key, items in STATEMENTS.items():
            text = table(g, key)
            head, at = text.splitlines()[0], 0
            for y in years:  # the header names the years in column order
                at = head.index(lay.column(y), at) + 1
            for item in items:
                sign = -1 if NAMINGS[naming].signed_expenses and key == "income" and item in EXPENSES else 1
                assert _row(text, lay.label(item)) == [lay.amount(sign * g.values[item][y]) for y in years], \
                    (style, naming, item)
    assert _row(table(replace(f, layout=replace(f.layout, naming="ifrs")), "income"), "Cost of sales")[0][0] in "(-"


def test_questions_name_their_unit_and_the_tables_announce_theirs(env):
    for split in ("train", "unseen"):
        for i in range(20):
            task = env.task(split, i, "lookup")
            f, gold, prompt = task.reference.filing, task.reference.gold, task.prompt[0].content
            assert gold.unit == f.unit and f"`Answer: <number> {gold.unit}`" in prompt
            assert unit_label(f) in prompt and f.layout.amount(round(gold.value)) in prompt
            other = env.task(split, i, "unit_conversion")
            asked = other.reference.gold
            assert asked.unit in asked.question and asked.unit != other.reference.filing.unit
            assert unit_label(other.reference.filing) in other.prompt[0].content


def test_low_levels_leave_out_the_notes_they_never_need(env):
    easy, hard = env.task("train", 0, "lookup").prompt[0].content, env.task("train", 0, "covenant").prompt[0].content
    assert "Basis of presentation" in easy and "Debt." not in easy and INSTRUCTION not in easy
    assert "Consolidated EBITDA means" in hard and INSTRUCTION in hard
    assert "twelve months" not in hard  # MD&A's liquidity boilerplate stays in the long report only


# -- episodes -------------------------------------------------------------------------------
def test_wrong_answer_gets_feedback_then_a_right_one_ends_the_episode(env):
    task = env.task("train", 2, "margin")
    gold = task.reference.gold
    env.reset(task)
    first = env.step(env.broken_response(task))
    assert not first.terminated and first.reward == 0.0 and first.info["status"] == "wrong_number"
    text = first.messages[0].content
    assert "outside the tolerance" in text and "income statement" in text  # level 2: the rows are hinted
    assert task.reference.filing.layout.label("revenue") in text  # by the labels the filing prints
    assert answer_line(gold, gold.value).split(": ")[1].split()[0] not in text
    second = env.step(env.reference_response(task))
    assert second.terminated and second.reward == 1.0


def test_feedback_hints_only_at_low_difficulty_and_turn_cost_applies():
    env = StatementsEnv(turn_cost=0.25)
    task = env.task("train", 0, "working_capital")
    env.reset(task)
    text = env.step("Answer: 123456789 " + task.reference.gold.unit).messages[0].content
    assert "outside the tolerance" in text and "rows:" not in text
    assert env.step(env.reference_response(task)).reward == 0.75


def test_last_wrong_answer_ends_the_episode_unrewarded():
    env = StatementsEnv(max_turns=2)
    task = env.task("train", 1, "lookup")
    env.reset(task)
    assert not env.step("I am not sure.").terminated
    last = env.step(env.broken_response(task))
    assert last.terminated and last.reward == 0.0


# -- the long report and its tools ------------------------------------------------------------
def test_long_prompt_is_short_and_the_report_is_long(long_env):
    task = long_env.task("train", 0, "restated_growth")
    prompt = task.prompt[0].content
    assert len(prompt) < 4000 and "`note-1`" in prompt and "read_section" in prompt
    assert len(long_env.document(task)) > 100_000
    assert "Revenue |" not in prompt  # the statements are only in the report


def test_search_and_read_find_the_restatement(long_env):
    task = long_env.task("train", 0, "restated_growth")
    note = next(s for s in task.metadata["sections"] if s.startswith("note-"))
    r = task.reference.filing.restatement
    hits = long_env.document(task).search("restated revenue")
    assert f"1. {note}:" in hits or f"2. {note}:" in hits or f"3. {note}:" in hits
    page = long_env.document(task).read(note)
    label = task.reference.filing.layout.label("revenue").lower()
    assert f"{label} revised to {r.revenue:,}" in page and "page 1 of 1" in page


def test_tool_errors_are_clear(long_env):
    task = long_env.task("train", 0, "lookup")
    long_env.reset(task)
    assert long_env.tool(task, 'read_section("note-99")').startswith("Tool error: there is no section 'note-99'")
    assert "has 1 page(s)" in long_env.tool(task, 'read_section("income-statement", 5)')
    assert long_env.tool(task, "search(revenue)").startswith("Tool error")
    assert long_env.tool(task, 'search("")').startswith("Tool error")
    pages = long_env.tool(task, 'read_section("risk-factors", page=2)')
    assert "(page 2 of " in pages and 'read_section("risk-factors", 3)' in pages


def test_tool_call_syntax():
    assert parse_tool_call('Let me look.\nsearch("net income")') == ("search", '"net income"')
    assert parse_tool_call('```\nread_section("note-3", 2)\n```') == ("read_section", '"note-3", 2')
    assert parse_tool_call('`read_section("mdna")`') == ("read_section", '"mdna"')
    assert parse_tool_call("search(\"x\") first, then\nAnswer: 5 %") is None


def test_search_read_answer_episode(long_env):
    task = long_env.task("train", 4, "covenant")
    note = next(s for s in task.metadata["sections"] if s.startswith("note-"))
    long_env.reset(task)
    found = long_env.step('I need the covenant definition.\nsearch("covenant Consolidated EBITDA")')
    assert not found.terminated and found.info["tool"] and note in found.messages[0].content
    assert found.messages[0].content.endswith("(reply 2 of 6)")
    read = long_env.step(f'read_section("{note}")')
    assert "Consolidated EBITDA means" in read.messages[0].content
    income = long_env.step('read_section("income-statement")')
    assert task.reference.filing.layout.label("operating_income") in income.messages[0].content
    done = long_env.step("The ratio is computed above.\n" + long_env.reference_response(task))
    assert done.terminated and done.reward == 1.0 and done.info["turn"] == 4


def test_last_reply_is_graded_even_when_it_calls_a_tool():
    env = FilingsEnv(max_turns=2)
    task = env.task("train", 0, "lookup")
    env.reset(task)
    assert not env.step('search("revenue")').terminated
    last = env.step('search("revenue")')
    assert last.terminated and last.reward == 0.0 and last.info["status"] == "no_answer"
