"""Repository tasks without a sandbox: AST mutations, node ids, the repo task format, which
seed modules each split draws."""

from __future__ import annotations

import ast
import textwrap

import pytest
import yaml

from tempering.envs.terminal import load_task, mutate
from tempering.envs.terminal.repo import case_key, counted, node_name
from tempering.envs.terminal import repo_gen
from tempering.envs.terminal.repo_env import RepoEnv
from tempering.envs.terminal.repo_gen import generate, seed_source, sites
from tempering.envs.terminal.repo_seeds import SEEDS, TRAINED_MODULES, UNSEEN_MODULES
from tempering.envs.terminal.scoring import TestOutcome as Outcome
from tempering.envs.terminal.task import RepoTests
from tempering.errors import TaskError

SOURCE = textwrap.dedent('''
    """A module."""
    LIMIT = 10  # module level: never mutated


    def clamp(xs, lo, hi):
        """Docstring: never mutated."""
        out = []
        for x in xs[1:]:  # keep this comment
            if x < lo and not x == hi:
                out.append(lo)
            elif x > hi:
                out.append(max(hi, x - 1))
            else:
                out.append(x)
        return out


    class Box:
        size = 3  # class level: never mutated

        def grow(self, n=2):
            self.size += n
            return self.size * 2.5 == True
''')


def test_mutation_sites_cover_every_operator_inside_functions_only():
    found = mutate.mutation_sites(SOURCE)
    assert {s.operator for s in found} == set(mutate.OPERATORS)
    assert {s.function for s in found} == {"clamp", "Box.grow"}
    assert all(s.line not in (3, 7, 20) for s in found)  # module, docstring and class-level lines
    assert found == mutate.mutation_sites(SOURCE)  # the same order every time


def test_every_mutant_is_a_one_site_change_that_keeps_the_rest_of_the_file():
    for site in mutate.mutation_sites(SOURCE):
        m = mutate.apply(SOURCE, site)
        assert m is not None, site
        assert m.source != SOURCE and ast.parse(m.source)
        assert "# keep this comment" in m.source or site.operator == "drop_branch"
        assert m.description.startswith(f"line {site.line} in {site.function}: ")
    by_op = {}
    for s in sorted(mutate.mutation_sites(SOURCE), key=lambda s: (s.line, s.index)):
        by_op.setdefault(s.operator, s)  # the first site of each in the file
    assert "if x <= lo and not x == hi:" in mutate.apply(SOURCE, by_op["compare"]).source
    assert "for x in xs[2:]:" in mutate.apply(SOURCE, by_op["off_by_one"]).source
    assert "max(hi, x + 1)" in mutate.apply(SOURCE, by_op["arithmetic"]).source
    assert "if x < lo or not x == hi:" in mutate.apply(SOURCE, by_op["boolean"]).source
    assert "max(x - 1, hi)" in mutate.apply(SOURCE, by_op["swap_args"]).source
    dropped = mutate.apply(SOURCE, by_op["drop_branch"]).source
    assert "elif" not in dropped and "out.append(lo)" in dropped


def test_negative_constants_are_written_as_the_parser_reads_them():
    source = "def f(xs):\n    return xs[-1] + 0\n"
    texts = {mutate.apply(source, s).source for s in mutate.mutation_sites(source) if s.operator == "off_by_one"}
    assert "def f(xs):\n    return xs[-2] + 0\n" in texts and "def f(xs):\n    return xs[-1] + -1\n" in texts


@pytest.mark.parametrize("module", sorted(SEEDS))
def test_seed_modules_copy_without_accelerators_and_have_sites(module):
    source = seed_source(module)
    assert "from _" not in source and "__main__" not in source and "```" not in source
    assert len(sites(module)) > 40


def test_the_unseen_split_holds_out_whole_seed_modules(monkeypatch):
    assert set(TRAINED_MODULES) | set(UNSEEN_MODULES) == set(SEEDS) and not set(TRAINED_MODULES) & set(UNSEEN_MODULES)
    assert len(TRAINED_MODULES) >= 6 and 1 <= len(UNSEEN_MODULES) <= 2

    def fake(seed, rng, split, seed_n, index, sandbox):  # a module that yields no bug now and then: another is drawn
        return None if rng.random() < 0.25 else seed.module

    monkeypatch.setattr(repo_gen, "_try_module", fake)
    drawn = {split: [generate(split, i, sandbox=object()) for i in range(n)]
             for split, n in (("train", 200), ("test", 50), ("unseen", 50))}
    assert set(drawn["train"]) == set(drawn["test"]) == set(TRAINED_MODULES)
    assert set(drawn["unseen"]) == set(UNSEEN_MODULES)


def test_the_env_offers_the_unseen_split_and_refuses_to_train_on_it():
    env = RepoEnv()
    assert env.splits == ("train", "test", "unseen") and env.size("unseen") == env.size("train") > 0
    assert (env.families, env.unseen_families) == (TRAINED_MODULES, UNSEEN_MODULES)
    with pytest.raises(TaskError, match="no family 'heapq' in split train"):
        env.task("train", 0, "heapq")
    with pytest.raises(TaskError, match="no family 'bisect' in split unseen"):
        env.task("unseen", 0, "bisect")
    with pytest.raises(TaskError, match="held out for terminal/repo-v1's unseen split"):
        RepoEnv(modules=("bisect", "shlex"))


def test_node_ids_map_to_the_judges_case_keys():
    assert case_key("tests/test_x.py::test_a") == "tests.test_x::test_a"
    assert case_key("tests/sub/test_x.py::TestA::test_b[1]") == "tests.sub.test_x.TestA::test_b[1]"
    assert node_name("tests/test_x.py::test_a[2-3]") == "test_a"
    assert node_name("tests/test_x.py::TestA::test_b") == "TestA.test_b"
    outcome = Outcome(False, "1 of 3 tests did not pass", {"tests.test_x::test_a": "passed",
                                                               "tests.test_x::test_b": "failed",
                                                               "tests.test_x::test_c": "passed"})
    c = counted(outcome, RepoTests(("tests/test_x.py::test_a", "tests/test_x.py::test_b"), ("tests/test_x.py::test_c",)))
    assert c.counts == {"fail_to_pass": [1, 2], "pass_to_pass": [1, 1]}
    assert c.reason.startswith("FAIL_TO_PASS 1/2, PASS_TO_PASS 1/1 passed; 1 of 3")


def write_repo(root, **config):
    d = root / "repo-task"
    (d / "files" / "pkg").mkdir(parents=True)
    (d / "files" / "tests").mkdir()
    (d / "files" / "pkg" / "__init__.py").write_text("def add(a, b):\n    return a - b\n")
    (d / "files" / "tests" / "test_pkg.py").write_text("def test_add(): pass\ndef test_zero(): pass\n")
    (d / "held_out" / "tests").mkdir(parents=True)
    (d / "held_out" / "tests" / "test_more.py").write_text("class TestMore:\n    def test_big(self): pass\n")
    cfg = {"instruction": "add() subtracts.", "fail_to_pass": ["tests/test_pkg.py::test_add",
                                                                "tests/test_more.py::TestMore::test_big"],
           "pass_to_pass": ["tests/test_pkg.py::test_zero"], "solution": "sed -i s/-/+/ pkg/__init__.py", **config}
    (d / "task.yaml").write_text(yaml.safe_dump(cfg))
    return d


def test_repo_format_loads_snapshot_tests_and_held_out_tests(tmp_path):
    task = load_task(write_repo(tmp_path))
    assert task.format == "repo" and task.category == "repository" and task.problem is None
    assert set(task.tests) == {"tests/test_pkg.py", "tests/test_more.py"}  # not the package itself
    assert task.test_targets == ("tests/test_pkg.py::test_add", "tests/test_more.py::TestMore::test_big",
                                 "tests/test_pkg.py::test_zero")
    assert task.expected_tests == ("test_add", "TestMore.test_big", "test_zero")
    assert task.repo.pass_to_pass == ("tests/test_pkg.py::test_zero",)


def test_repo_format_mistakes_are_named(tmp_path):
    with pytest.raises(TaskError, match="node ids"):
        load_task(write_repo(tmp_path / "a", fail_to_pass=["tests/test_pkg.py"]))
    with pytest.raises(TaskError, match="at least one"):
        load_task(write_repo(tmp_path / "b", fail_to_pass=[]))
    with pytest.raises(TaskError, match="test_files"):
        load_task(write_repo(tmp_path / "c", test_files=["tests/nope.py"]))
    task = load_task(write_repo(tmp_path / "d", pass_to_pass=["tests/test_gone.py::test_x"]))
    assert "tests/test_gone.py" in task.problem
