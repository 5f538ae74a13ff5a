"""code/handwritten-v1: every canonical solution passes its tests in the sandbox and trivial
bodies fail; the records are HumanEval-format prompts with examples; no problem shares a name
or a docstring with HumanEval or the docstring-v1 generator; it is evaluation data only."""

from __future__ import annotations

import ast
import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from tempering.envs import check_env, make
from tempering.envs.code.docstring import FAMILIES
from tempering.envs.code.handwritten import DATA, ENV_ID, load_handwritten
from tempering.envs.code.humaneval import load_humaneval
from tempering.errors import TaskError

TRIVIAL = ("    pass\n", "    return None\n")


def _docstring(prompt: str, entry_point: str) -> str:
    fn = next(n for n in ast.walk(ast.parse(prompt)) if isinstance(n, ast.FunctionDef) and n.name == entry_point)
    return ast.get_docstring(fn) or ""


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_check_env_proves_every_problem(shared_sandbox):
    report = check_env(ENV_ID, n=0)
    assert report.ok, report.problems
    assert report.checked == 60


def test_canonicals_pass_and_trivial_bodies_fail(shared_sandbox):
    env = make(ENV_ID)
    tasks = env.tasks("test", env.size("test"))
    replies = [(t, env.reference_response(t), True) for t in tasks]
    replies += [(t, body, False) for t in tasks for body in TRIVIAL]  # a body continuing the prompt
    with ThreadPoolExecutor(8) as pool:
        scores = list(pool.map(lambda r: env.verify(r[0], r[1]), replies))
    wrong = [(t.id, reply[:20]) for (t, reply, good), s in zip(replies, scores) if s.passed != good]
    assert wrong == []


def test_records_are_humaneval_shaped_with_examples():
    rows = json.loads(DATA.read_text())["problems"]
    assert len(rows) == 60 and len({r["entry_point"] for r in rows}) == 60
    for row in rows:
        assert set(row) == {"task_id", "entry_point", "prompt", "canonical_solution", "test"}
        doc = _docstring(row["prompt"], row["entry_point"])
        assert ">>> " + row["entry_point"] + "(" in doc, row["entry_point"]
        assert row["test"].startswith("def check(candidate):") and row["test"].count("assert ") >= 5
        assert row["prompt"].endswith('    """\n')


def test_no_name_or_docstring_is_humanevals_or_the_generators():
    humaneval = load_humaneval()
    ours = load_handwritten()
    assert not {p.entry_point for p in ours} & {p.entry_point for p in humaneval}
    generated = {fn for f in FAMILIES for fn in f.fns} | {f.name for f in FAMILIES}
    assert not {p.entry_point for p in ours} & generated
    theirs = [_words(_docstring(p.prompt, p.entry_point)) for p in humaneval]
    theirs += [_words(doc) for f in FAMILIES for doc in f.docs]
    texts = {" ".join(_docstring(p.prompt, p.entry_point).split()) for p in humaneval}
    for p in ours:
        doc = _docstring(p.prompt, p.entry_point)
        assert " ".join(doc.split()) not in texts
        mine = _words(doc)
        # word overlap with the nearest HumanEval or generator docstring: about 0.3 at most today
        assert max(len(mine & w) / len(mine | w) for w in theirs) < 0.45, p.entry_point


def test_it_is_evaluation_data_only():
    env = make(ENV_ID)
    assert env.splits == ("test",) and env.size("train") == 0 and env.size("test") == 60
    with pytest.raises(TaskError, match="only split is 'test'.*train on code/docstring-v1"):
        env.task("train", 0)
    with pytest.raises(TaskError, match="index 60 is out of range"):
        env.task("test", 60)
