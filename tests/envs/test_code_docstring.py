"""code/docstring-v1: HumanEval-shaped prompts; every family's reference passes its own tests in
the sandbox and a broken variant fails; the splits are disjoint and the held-out families are
only in `unseen`; the same seed gives the same task; no family is named as a HumanEval problem.
The tests over `CATALOGS` hold for code/steps-v1 too, which shares the env and its renderer."""

from __future__ import annotations

import ast
import copy
import random
import re
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pytest

from tempering.envs import check_env, make
from tempering.envs.code.docstring.env import BY_NAME, FAMILIES, FAMILY_NAMES, KINDS, UNSEEN_FAMILIES, strong_cases
from tempering.envs.code.docstring import steps_env
from tempering.envs.code.docstring.render import (STYLES, argument_names, build, compile_reference, function_name,
                                                  reference_source)
from tempering.envs.code.humaneval import load_humaneval
from tempering.errors import TaskError

ENV_ID = "code/docstring-v1"


class Catalog(NamedTuple):
    """One env built on DocstringEnv: its families and how it draws a task."""
    env_id: str
    families: tuple
    unseen: tuple
    by_name: dict
    build: object
    min_names: int  # distinct function names among 120 train tasks


CATALOGS = [Catalog(ENV_ID, tuple(FAMILIES), UNSEEN_FAMILIES, BY_NAME, build, 80),
            Catalog(steps_env.ENV_ID, tuple(steps_env.FAMILIES), steps_env.UNSEEN_FAMILIES, steps_env.BY_NAME,
                    steps_env.build_varied, 60)]


@pytest.fixture(scope="module")
def env():
    return make(ENV_ID)


@pytest.fixture(scope="module", params=CATALOGS, ids=[c.env_id for c in CATALOGS])
def catalog(request):
    return request.param


@pytest.fixture(scope="module")
def catalog_env(catalog):
    return make(catalog.env_id)


def _code(task) -> str:
    return task.prompt[0].content.split("```python\n", 1)[1].rsplit("```", 1)[0]


def test_at_least_40_families_over_seven_kinds_with_held_out_ones_in_each():
    assert len(FAMILIES) >= 40 and len(BY_NAME) == len(FAMILIES)
    assert {f.kind for f in FAMILIES} == set(KINDS)
    assert set(FAMILY_NAMES) | set(UNSEEN_FAMILIES) == set(BY_NAME) and not set(FAMILY_NAMES) & set(UNSEEN_FAMILIES)
    held = [BY_NAME[n].kind for n in UNSEEN_FAMILIES]
    trained = [BY_NAME[n].kind for n in FAMILY_NAMES]
    assert all(1 <= held.count(k) <= 2 and trained.count(k) >= 3 for k in KINDS)
    assert all(len(f.docs) >= 2 and len(f.fns) >= 2 for f in FAMILIES)


def test_splits_are_disjoint_and_unseen_draws_only_held_out_families(env):
    drawn = {split: env.tasks(split, n) for split, n in (("train", 300), ("test", 60), ("unseen", 60))}
    families = {split: {t.metadata["family"] for t in tasks} for split, tasks in drawn.items()}
    assert not (families["train"] | families["test"]) & set(UNSEEN_FAMILIES)
    assert families["unseen"] <= set(UNSEEN_FAMILIES) and len(families["unseen"]) >= 8
    assert len(families["train"]) >= 50 and len(families["test"]) >= 30
    prompts = {split: {t.prompt[0].content for t in tasks} for split, tasks in drawn.items()}
    assert not prompts["train"] & prompts["test"] and not prompts["train"] & prompts["unseen"]
    assert env.splits == ("train", "test", "unseen") and env.unseen_families == UNSEEN_FAMILIES
    with pytest.raises(TaskError, match="no task family 'initials' in split train"):
        env.task("train", 0, family="initials")


def test_prompts_are_humaneval_shaped_with_examples_the_reference_gives(catalog, catalog_env):
    layouts, hints, names = set(), set(), set()
    for task in catalog_env.tasks("train", 120):
        code, ref = _code(task), task.reference
        fn = next(n for n in ast.parse(code).body if isinstance(n, ast.FunctionDef))
        doc = ast.get_docstring(fn)
        assert fn.name == ref.entry_point and doc and code.endswith('    """\n')
        assert fn.body and len(fn.body) == 1  # the docstring alone: the model writes the body
        visible = ref.metadata["visible"]
        assert 2 <= len(visible) <= 3 and len(ref.cases) == 10
        assert not {repr(c["args"]) for c in visible} & {repr(c["args"]) for c in ref.cases}
        for c in visible:
            assert f"{fn.name}({', '.join(map(repr, c['args']))})" in doc and repr(c["expected"]) in doc
        layouts.add(">>>" in doc)
        hints.add("from typing import" in code if fn.returns else "bare")
        names.add(fn.name)
    assert layouts == {True, False} and hints == {True, False, "bare"} and len(names) >= catalog.min_names


def test_the_reference_is_one_function_whatever_the_names_drawn(catalog):
    """A body that shadowed an argument with a local would compute something else under some
    names: each family gives the same outputs under every naming style."""
    for family in catalog.families:
        rng = random.Random(family.name)
        params = family.params(rng)
        inputs = [family.inputs(rng, params) for _ in range(20)]
        outputs = set()
        for style in range(max(len(choices) for choices, _ in family.args)):
            for snake in family.fns:
                fn = function_name(snake, rng.choice([s for s, _ in STYLES]))
                ref = compile_reference(reference_source(family, fn, argument_names(family, fn, style), params), fn)
                outputs.add(repr([ref(*copy.deepcopy(args)) for args in inputs]))
        assert len(outputs) == 1, family.name


def test_tasks_reproduce_from_their_seed(catalog, catalog_env):
    assert catalog_env.task("test", 4) == catalog_env.task("test", 4)
    assert catalog_env.task("unseen", 2) == catalog_env.task("unseen", 2)
    first = catalog.families[0]
    assert catalog.build(first, random.Random(3)) == catalog.build(first, random.Random(3))


def test_every_family_reference_passes_its_tests_in_the_sandbox_and_a_broken_one_fails(shared_sandbox, catalog,
                                                                                       catalog_env):
    tasks = [catalog_env.task("unseen" if f.name in catalog.unseen else "train", i, family=f.name)
             for f in catalog.families for i in range(2)]
    with ThreadPoolExecutor(8) as pool:
        ref = list(pool.map(lambda t: catalog_env.verify(t, catalog_env.reference_response(t)), tasks))
        broken = list(pool.map(lambda t: catalog_env.verify(t, catalog_env.broken_response(t)), tasks[::2]))
    assert [t.id for t, s in zip(tasks, ref) if not s.passed] == []
    assert [t.id for t, s in zip(tasks[::2], broken) if s.value >= 1.0] == []


def test_a_body_only_completion_is_scored_as_humaneval_scores_one(shared_sandbox, catalog_env):
    task = catalog_env.task("train", 0)
    body = task.reference.reference[len(task.reference.prompt):]
    assert catalog_env.verify(task, body).passed
    assert catalog_env.verify(task, "    return None\n").value < 1.0
    assert catalog_env.strong_verify(task, catalog_env.reference_response(task)).passed


def test_strong_cases_are_new_inputs_of_the_same_function(catalog, catalog_env):
    for task in catalog_env.tasks("train", 20):
        code = task.reference
        own = {repr(c["args"]) for c in (*code.metadata["visible"], *code.cases)}
        strong = strong_cases(code, catalog.by_name)
        assert len(strong) >= 20 and not {repr(c["args"]) for c in strong} & own


def test_check_env_over_the_three_splits(shared_sandbox, catalog):
    report = check_env(catalog.env_id, n=5)
    assert report.ok, report.problems
    assert report.checked == 15


def test_no_function_name_a_family_can_take_is_a_humaneval_entry_point():
    humaneval = {p.entry_point.lower().replace("_", "") for p in load_humaneval()}
    names = {re.sub("_", "", fn) for f in FAMILIES for fn in f.fns}
    assert not names & humaneval
