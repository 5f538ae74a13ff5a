"""code/steps-v1: multi-step families in HumanEval's shape. Every family's reference passes
its own tests in the sandbox and a broken variant fails; bodies are 4-12 lines; no task can be
passed by a constant; the splits are disjoint with one held-out family per kind; no family is
named as, or worded like, a HumanEval or code/handwritten-v1 problem. The tests it shares with
code/docstring-v1 (HumanEval's shape, references pass and broken ones fail, check_env) are
in test_code_docstring.py."""

from __future__ import annotations

import ast
import random
import re
import statistics

import pytest

from tempering.envs import check_env, make
from tempering.envs.code.docstring.family import fam
from tempering.envs.code.docstring.render import (_fields, argument_names)
from tempering.envs.code.docstring.steps_env import (BY_NAME, ENV_ID, FAMILIES, FAMILY_NAMES, KINDS,
                                                     UNSEEN_FAMILIES, build_varied)
from tempering.envs.code.handwritten import load_handwritten
from tempering.envs.code.humaneval import load_humaneval
from tempering.errors import TaskError


@pytest.fixture(scope="module")
def env():
    return make(ENV_ID)


def _code(task) -> str:
    return task.prompt[0].content.split("```python\n", 1)[1].rsplit("```", 1)[0]


def _docstring(prompt: str, entry_point: str) -> str:
    fn = next(n for n in ast.walk(ast.parse(prompt)) if isinstance(n, ast.FunctionDef) and n.name == entry_point)
    return ast.get_docstring(fn) or ""


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def _phrasings(family) -> list[str]:
    """Every phrasing of `family` as a task writes it, under each naming style of its arguments."""
    params = family.params(random.Random(family.name))
    styles = range(max(len(choices) for choices, _ in family.args))
    return [doc.format(**_fields(family.fns[0], argument_names(family, family.fns[0], s), params))
            for s in styles for doc in family.docs]


def test_at_least_30_families_over_five_kinds_with_one_held_out_in_each():
    assert len(FAMILIES) >= 30 and len(BY_NAME) == len(FAMILIES)
    assert {f.kind for f in FAMILIES} == set(KINDS) and len(KINDS) == 5
    assert set(FAMILY_NAMES) | set(UNSEEN_FAMILIES) == set(BY_NAME) and not set(FAMILY_NAMES) & set(UNSEEN_FAMILIES)
    assert sorted(BY_NAME[n].kind for n in UNSEEN_FAMILIES) == sorted(KINDS)
    assert all(sum(f.kind == k for f in FAMILIES) >= 5 for k in KINDS)
    assert all(len(f.docs) >= 2 and len(f.fns) >= 2 for f in FAMILIES)


def test_reference_bodies_are_multi_step():
    lines = [f.body.count("\n") + 1 for f in FAMILIES]
    assert [f.name for f, n in zip(FAMILIES, lines) if not 4 <= n <= 12] == []
    assert statistics.median(lines) >= 5


def test_splits_are_disjoint_and_unseen_draws_only_held_out_families(env):
    drawn = {split: env.tasks(split, n) for split, n in (("train", 200), ("test", 40), ("unseen", 40))}
    families = {split: {t.metadata["family"] for t in tasks} for split, tasks in drawn.items()}
    assert not (families["train"] | families["test"]) & set(UNSEEN_FAMILIES)
    assert families["unseen"] == set(UNSEEN_FAMILIES)
    assert len(families["train"]) >= 28 and len(families["test"]) >= 15
    prompts = {split: {t.prompt[0].content for t in tasks} for split, tasks in drawn.items()}
    assert not prompts["train"] & prompts["test"] and not prompts["train"] & prompts["unseen"]
    assert env.splits == ("train", "test", "unseen") and env.unseen_families == UNSEEN_FAMILIES
    assert env.families == FAMILY_NAMES and not set(env.families) & set(make("code/docstring-v1").families)
    with pytest.raises(TaskError, match="no task family 'current_page' in split train"):
        env.task("train", 0, family="current_page")


def test_no_task_can_be_passed_by_a_constant(env):
    """The ten hidden answers of a task are never all equal, and the docstring's examples
    almost always show different answers."""
    tasks = env.tasks("train", 300) + env.tasks("test", 100) + env.tasks("unseen", 100)
    constant = [t.id for t in tasks if len({repr(c["expected"]) for c in t.reference.cases}) == 1]
    assert constant == []
    visible = [t.reference.metadata["visible"] for t in tasks]
    same = [v for v in visible if len({repr(c["expected"]) for c in v}) < len(v)]
    assert len(same) <= 0.1 * len(tasks)


def test_build_varied_redraws_a_task_whose_hidden_answers_are_all_equal():
    flat = fam("flat", "flat level", ("xs: List[int]",), "int", ("Return 0 unless {a} is [9].",),
               "if {a} == [9]:\n        return 1\n    return 0", lambda r, p: [[r.randint(0, 9)]])
    code = build_varied(flat, random.Random(0))
    assert {c["expected"] for c in code.cases} == {0, 1}
    never = fam("never", "never always", ("xs: List[int]",), "int", ("Return 0.",), "return 0",
                lambda r, p: [[r.randint(0, 99)]])
    with pytest.raises(ValueError, match="same answer to every hidden case"):
        build_varied(never, random.Random(0))


def test_with_turns_a_wrong_reply_gets_a_docstring_example_back_as_in_docstring_v1(shared_sandbox):
    env = make(ENV_ID, max_turns=3)
    task = env.task("unseen", 0)
    first_example = task.reference.metadata["visible"][0]
    env.reset(task)
    first = env.step(env.broken_response(task))  # every answer it gives is changed: the first example fails
    assert not first.terminated and first.reward == 0.0
    call = f"{task.reference.entry_point}({', '.join(map(repr, first_example['args']))})"
    assert call + ": expected" in first.messages[0].content and "attempt 2 of 3" in first.messages[0].content
    second = env.step(env.reference_response(task))
    assert second.terminated and second.reward == 1.0 and second.info["turn"] == 2
    report = check_env(ENV_ID, n=1, options={"max_turns": 3})
    assert report.ok, report.problems


def test_no_function_name_a_family_can_take_is_a_humaneval_or_handwritten_entry_point():
    held = {p.entry_point.lower().replace("_", "") for p in (*load_humaneval(), *load_handwritten())}
    names = {fn.replace("_", "") for f in FAMILIES for fn in (*f.fns, f.name)}
    assert not names & held


def test_no_phrasing_is_worded_like_a_humaneval_or_handwritten_docstring():
    theirs = [(p.entry_point, _words(_docstring(p.prompt, p.entry_point)))
              for p in (*load_humaneval(), *load_handwritten())]
    for family in FAMILIES:
        for text in _phrasings(family):
            mine = _words(text)
            # word overlap with the nearest docstring: under 0.3 today
            nearest, who = max((len(mine & w) / len(mine | w), name) for name, w in theirs)
            assert nearest <= 0.45, (family.name, who, nearest)
