"""code/repo-function-v1, the repository tasks' function rung: finding and splicing the bug's
function (pure), the reward and the feedback text, then in the sandbox: the prompt's failure
output is the buggy package's, the reference passes and the buggy function fails, and a
wrong reply gets the new failures back."""

from __future__ import annotations

import ast
from dataclasses import replace

import pytest

from tempering.envs.terminal.repo_function import RepoFunctionEnv, feedback, reward_of, run_shown_tests
from tempering.envs.terminal.repo_unit import bug_unit, function_in, splice
from tempering.envs.terminal.runner import TaskSession

ORIGINAL = '''import functools


def top(x):
    return x + 1


class Box:
    class Inner:
        def size(self):
            return 2

    @functools.lru_cache
    def area(self, w, h):
        """Multi-line docstring:
keeps its own indentation."""
        def helper(v):
            return v * 2
        if w > h:
            return helper(w) * h
        return w * h
'''


def _same(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))


@pytest.mark.parametrize(("old", "new", "qualname"), [
    ("w > h", "w >= h", "Box.area"),              # in a nested function's caller: the method whole
    ("v * 2", "v * 3", "Box.area"),               # in the nested function: still the method
    ("return 2", "return 3", "Box.Inner.size"),   # a method of a nested class
    ("x + 1", "x - 1", "top"),
    ("        return w * h\n", "", "Box.area"),   # the last statement dropped: nothing changed inside it
])
def test_the_bug_unit_is_the_outermost_function_and_its_fix_splices_back(old, new, qualname):
    mutated = ORIGINAL.replace(old, new, 1)
    unit, fixed = bug_unit(mutated, ORIGINAL)
    assert unit.qualname == fixed.qualname == qualname
    shown, reference = unit.text(mutated), fixed.text(ORIGINAL)
    assert shown.startswith(("@functools.lru_cache\ndef area(", "def ")) and shown != reference
    assert _same(splice(mutated, unit, reference), ORIGINAL)
    if qualname == "Box.area":  # the docstring's own line is string content: never re-indented
        assert "\nkeeps its own indentation." in shown


def test_the_function_is_read_from_the_reply():
    reply = ("Here is the fix:\n```python\n    def area(self, w, h):\n        return w * h\n```\n"
             "And a helper I also wrote:\n```python\ndef helper(v):\n    return v\n```")
    text, problem = function_in(reply, "area")  # pasted at its class's indentation; the other block left out
    assert problem is None and text == "def area(self, w, h):\n    return w * h\n"
    assert function_in("```python\ndef area(:\n```", "area")[1].startswith("Your code does not parse: SyntaxError")
    assert "no `def area(...)`" in function_in("```python\ndef other():\n    pass\n```", "area")[1]
    assert function_in("", "area") == (None, "The reply is empty.")
    text, _ = function_in("def area(self, w, h):\n    return 0\n", "area")  # no fence: the reply whole
    assert text.startswith("def area(")


def test_reward_kinds():
    counts = {"fail_to_pass": [1, 4], "pass_to_pass": [5, 6]}
    assert reward_of(counts, False, "fixed") == pytest.approx(1 / 4 * 5 / 6)
    assert reward_of(counts, False, "tests") == pytest.approx(6 / 10)
    assert reward_of(counts, False, "binary") == 0.0
    assert reward_of({"fail_to_pass": [0, 3], "pass_to_pass": [6, 6]}, False, "fixed") == 0.0  # the bug written back
    assert reward_of({"fail_to_pass": [2, 4], "pass_to_pass": [0, 0]}, False, "fixed") == 0.5
    assert reward_of({}, False, "tests") == 0.0 and reward_of(counts, True, "fixed") == 1.0


def test_feedback_shows_the_first_failures_or_counts_the_hidden_ones():
    out = ("PASSED test_a\nFAILED test_b\nAssertionError: pk.f(1)\nreturned 2\nexpected 3\n\n"
           "FAILED test_c\nAssertionError: c\nFAILED test_d\nAssertionError: d\n1 passed, 3 failed")
    text = feedback(out, "pk", {})
    assert "(1 passed, 3 failed)" in text and "returned 2\nexpected 3" in text and "test_c" in text
    assert "test_d" not in text and "test_a" not in text
    hidden = feedback("PASSED test_a\n1 passed, 0 failed", "pk", {"fail_to_pass": [1, 3], "pass_to_pass": [4, 4]})
    assert "passes (1 passed, 0 failed), but 2 hidden tests still fail" in hidden


@pytest.fixture(scope="module")
def env(shared_sandbox):
    return RepoFunctionEnv(sandbox=shared_sandbox, modules=("bisect",), max_turns=3)


@pytest.fixture(scope="module")
def task(env):
    return env.task("train", 0)


def _block(output: str, name: str) -> str:
    """The FAILED block of test `name` in what the test file printed."""
    start = output.index(f"FAILED {name}\n")
    end = min([i for i in (output.find("\nPASSED ", start), output.find("\nFAILED ", start + 1)) if i > 0]
              + [output.rindex("\n")])
    return output[start:end].strip()


def test_the_prompt_shows_the_buggy_function_and_what_its_failing_test_really_printed(task, shared_sandbox):
    ft = task.reference
    prompt = task.prompt[0].content
    assert ft.id == task.metadata["repo_task"] == "bisect-train-0000" and task.domain == "code"
    assert ft.shown in prompt and ft.test_source in prompt and ft.failure in prompt and ft.shown != ft.reference
    name = ft.test.split("::")[1]
    assert ft.test in ft.spec.fail_to_pass and ft.test_source.startswith(f"def {name}():")
    for source, status in ((ft.spec.mutated, "FAILED"), (ft.spec.original, "PASSED")):
        with TaskSession(replace(ft.spec, mutated=source).terminal_task(), shared_sandbox) as session:
            assert session.build() is None
            output = run_shown_tests(session, ft.spec)  # the whole test file, run again
        assert f"{status} {name}\n" in output
        if status == "FAILED":
            assert _block(output, name) == _block(ft.failure, name)


def test_a_wrong_reply_gets_its_new_failures_back_and_the_fix_passes(env, task):
    ft = task.reference
    name = ft.test.split("::")[1]
    env.reset(task)
    first = env.step(env.broken_response(task))  # the buggy function written back: the shown failure again
    f2p, p2p = len(ft.spec.fail_to_pass), len(ft.spec.pass_to_pass)
    assert not first.terminated and first.reward == 0.0 and first.info["score"] == 0.0
    assert first.info["counts"] == {"fail_to_pass": [0, f2p], "pass_to_pass": [p2p, p2p]}
    note = first.messages[0].content
    assert _block(ft.failure, name) in note and note.endswith("(reply 2 of 3)")
    wrong = "```python\ndef insort_right(a, x, lo=0, hi=None, *, key=None):\n    a.insert(lo, x)\n```"
    second = env.step(wrong)  # right only where x goes at lo: partial credit, new failures
    assert not second.terminated and 0.0 < second.info["score"] < 1.0
    again = second.messages[0].content
    assert again != note and "returned [" in again and again.endswith("(reply 3 of 3)")
    last = env.step(env.reference_response(task))
    assert last.terminated and last.reward == 1.0 and last.info["passed"]


def test_reference_passes_and_the_buggy_function_fails_on_an_unseen_task(shared_sandbox):
    env = RepoFunctionEnv(sandbox=shared_sandbox)
    task = env.task("unseen", 0, "heapq")
    ref, broken = env.verify(task, env.reference_response(task)), env.verify(task, env.broken_response(task))
    assert task.reference.spec.module == "heapq" and ref.passed and ref.value == 1.0
    assert not broken.passed and broken.value == 0.0 and broken.details["counts"]["fail_to_pass"][0] == 0
    assert env.verify(task, "").value == 0.0 and env.verify(task, "").status == "no_function"


@pytest.mark.slow
def test_check_env_two_per_split(shared_sandbox):
    from tempering import envs

    report = envs.check_env("code/repo-function-v1", n=2)
    assert report.ok and report.checked == 6, report.problems
