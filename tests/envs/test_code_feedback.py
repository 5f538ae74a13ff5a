"""The HumanEval-shaped code envs with the tool's feedback between attempts (max_turns > 1):
a failing reply gets the first failing docstring example back, never a hidden case; the
hidden tests score the last reply; max_turns=1 is the single-turn env as it was."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import pytest

from tempering import envs
from tempering.envs.code.examples import call_text, docstring_cases
from tempering.envs.code.humaneval import MISLEADING_EXAMPLES, load_humaneval
from tempering.envs.code.repair import feedback
from tempering.envs.code.verify import verify_code
from tempering.envs.protocols import episodic
from tempering.types import Score

CODE_ENVS = [("code/docstring-v1", "test", 0), ("code/handwritten-v1", "test", 2), ("code/humaneval-v1", "test", 0)]
PROMPT = '''def add(a: int, b: list) -> int:
    """Add a to the sum of b.

    >>> add(1, [2, 3])
    6
    >>> add(0,
    ...     [])
    0
    >>> add(1, [
    ... 1])
    2
    >>> sorted(add(1, [2]))
    >>> add(a=1, b=[])
    1
    For example:
    add(2, [2]) == 4
    * add(3, [3]) ➞ 6.
    add(4, [4]) ==> 8
    For add(5, [5]) the output should be 10
    >>> add(6, [6]) == 12
    """
'''


def test_docstring_cases_reads_doctests_and_one_line_examples():
    cases = docstring_cases(PROMPT, "add")
    assert [(c["args"], c["expected"]) for c in cases] == [
        ([1, [2, 3]], 6), ([0, []], 0), ([1, [1]], 2), ([2, [2]], 4), ([3, [3]], 6), ([4, [4]], 8), ([6, [6]], 12)]
    assert call_text("add", cases[0]) == "add(1, [2, 3])"
    assert docstring_cases(PROMPT, "other") == []


def test_feedback_names_the_failing_example_by_its_call():
    score = Score(0.0, False, {"status": "failed", "checks_passed": 1, "checks_total": 2, "failures": [
        {"case": 1, "where": "", "error": "AssertionError: case 1: expected 5, got 4"}]})
    msg = feedback(score, 1, 3, ["add(1, [])", "add(2, [3])"])
    assert "add(2, [3]): expected 5, got 4" in msg and "(1 of 2 passed)" in msg and "attempt 2 of 3" in msg
    crash = Score(0.0, False, {"status": "failed", "checks_total": 1, "failures": [
        {"case": 0, "where": "", "error": "CandidateError: ZeroDivisionError: division by zero"}]})
    assert "add(1, []): ZeroDivisionError: division by zero" in feedback(crash, 1, 2, ["add(1, [])"])
    assert "case 1: expected 5, got 4" in feedback(score, 1, 3)  # without calls: repair-v1's form


def test_every_canonical_solution_gives_its_visible_examples(shared_sandbox):
    """The examples feedback runs are right: HumanEval's and the hand-written canonicals give
    every one (MISLEADING_EXAMPLES are exactly those HumanEval's canonical does not give)."""
    he, hw = envs.make("code/humaneval-v1"), envs.make("code/handwritten-v1")
    tasks = [(he, t) for t in he.tasks("test", 164)] + [(hw, t) for t in hw.tasks("test", 60)]
    assert all(hw.visible_cases(t) for _, t in tasks[164:])  # every hand-written problem shows some

    def run(item):
        env, task = item
        cases = env.visible_cases(task)
        return task.id, cases and verify_code(replace(task.reference, cases=tuple(cases)), task.reference.reference,
                                              shared_sandbox)

    with ThreadPoolExecutor(4) as pool:
        failed = [tid for tid, s in pool.map(run, tasks) if s and not s.passed]
    assert failed == []
    for p in load_humaneval():
        if p.id in MISLEADING_EXAMPLES:
            cases = [docstring_cases(p.prompt, p.entry_point)[i] for i in MISLEADING_EXAMPLES[p.id]]
            assert verify_code(replace(p, cases=tuple(cases)), p.reference, shared_sandbox).details["checks_passed"] == 0


def _hidden_only_calls(task) -> list[str]:
    """The calls of hidden cases the prompt does not show: feedback must name none of them."""
    code = task.reference
    if code.cases is not None:
        cases = list(code.cases)
    else:
        calls = [n for n in ast.walk(ast.parse(code.test)) if isinstance(n, ast.Call)
                 and isinstance(n.func, ast.Name) and n.func.id == "candidate"]
        cases = []
        for call in calls:
            try:
                cases.append({"args": [ast.literal_eval(a) for a in call.args]})
            except ValueError:
                pass
    shown = {call_text(code.entry_point, c) for c in docstring_cases(code.prompt, code.entry_point)}
    hidden = [call_text(code.entry_point, c) for c in cases]
    return [c for c in hidden if c not in shown]


@pytest.mark.parametrize("env_id, split, index", CODE_ENVS)
def test_a_wrong_reply_gets_a_visible_example_back_and_the_fix_is_scored_on_the_hidden_tests(
        shared_sandbox, env_id, split, index):
    env = envs.make(env_id, max_turns=3)
    task = env.task(split, index)
    visible = env.visible_cases(task)
    env.reset(task)
    first = env.step(env.broken_response(task))  # every answer it gives is changed: the first example fails
    assert not first.terminated and first.reward == 0.0 and first.info["visible"]["status"] == "failed"
    msg = first.messages[0].content
    assert call_text(task.reference.entry_point, visible[0]) + ": expected" in msg and "attempt 2 of 3" in msg
    hidden = _hidden_only_calls(task)
    assert len(hidden) >= 3 and not [c for c in hidden if c in msg]
    assert "check(" not in msg and "assert" not in msg
    second = env.step(env.reference_response(task))
    assert second.terminated and second.info["turn"] == 2 and second.info["visible_status"] == "passed"
    assert second.reward == env.verify(task, env.reference_response(task)).value == 1.0
    assert second.info["hidden"]["status"] == "passed" and second.info["passed"]


def test_a_crash_comes_back_as_the_call_and_the_errors_last_line(shared_sandbox):
    env = envs.make("code/handwritten-v1", max_turns=2)
    task = env.task("test", 2)
    env.reset(task)
    crash = env.step("```python\ndef column_number(label):\n    raise ValueError('no columns today')\n```")
    assert "column_number('A'): ValueError: no columns today" in crash.messages[0].content
    last = env.step("```python\ndef column_number(label):\n    return 1\n```")  # attempts used up
    assert last.terminated and last.reward == 0.0 and last.info["status"] == "failed"
    assert last.info["visible_status"] == "failed" and last.info["turn"] == 2


def test_a_prompt_without_examples_ends_at_the_first_reply(shared_sandbox):
    env = envs.make("code/humaneval-v1", max_turns=3)
    task = next(t for t in env.tasks("test", 164) if not env.visible_cases(t))
    env.reset(task)
    step = env.step(env.broken_response(task))
    assert step.terminated and step.reward == 0.0 and step.info["turn"] == 1 and step.info["visible_status"] is None


@pytest.mark.parametrize("env_id, split, index", CODE_ENVS)
def test_max_turns_1_is_the_single_turn_env(shared_sandbox, env_id, split, index):
    env = envs.make(env_id)
    assert env.max_turns == 1 and not episodic(env, 1) and episodic(env, 3)
    task = env.task(split, index)
    assert env.reset(task) == list(task.prompt)
    wrong = env.broken_response(task)
    step = env.step(wrong)
    score = env.verify(task, wrong)
    assert step.terminated and not step.truncated and step.messages == () and step.reward == score.value
    drop = {"wall_s"}  # the run's own time
    assert {k: v for k, v in step.info.items() if k not in drop} == \
           {k: v for k, v in {"passed": score.passed, **score.details}.items() if k not in drop}


def test_natively_multi_turn_envs_are_still_measured_in_episodes():
    assert episodic(envs.make("code/repair-v1", max_turns=1), 1)
    assert not episodic(envs.make("code/synth-v1"), 3)


@pytest.mark.parametrize("env_id", ["code/docstring-v1", "code/handwritten-v1", "code/humaneval-v1"])
def test_check_env_with_three_turns(shared_sandbox, env_id):
    report = envs.check_env(env_id, n=2, options={"max_turns": 3})
    assert report.ok, report.problems


def test_temper_eval_accepts_max_turns_for_these_envs_and_refuses_single_turn_ones(monkeypatch, capsys):
    from tempering.cli.main import main

    class Loaded(Exception):
        pass

    def load(name):
        raise Loaded(name)

    monkeypatch.setattr("tempering.models.load", load)
    for env_id in ("code/docstring-v1", "code/handwritten-v1", "code/humaneval-v1"):
        with pytest.raises(Loaded):  # past the check, at the model
            main(["eval", "--model", "tiny-random", "--env", env_id, "--max-turns", "3"])
    assert main(["eval", "--model", "tiny-random", "--env", "code/synth-v1", "--max-turns", "3"]) == 2
    assert "code/synth-v1 is single-turn: drop --max-turns" in capsys.readouterr().err


def test_repair_demonstrations_of_docstring_tasks_replay_with_the_envs_feedback(shared_sandbox):
    """Trainable too: demonstrations of kind repair (wrong try, the env's feedback, fix) are made
    for code/docstring-v1 once it has turns, and replay to reward 1 through a fresh episode."""
    from tempering.trainer.demos import env_demonstrations
    from tempering.types import Message

    demos = env_demonstrations("code/docstring-v1", lambda ms: sum(len(m.content.split()) for m in ms), budget=800,
                               kinds={"repair": 1.0}, seed=1, max_tasks=2)
    assert demos.kinds["repair"] >= 1, demos.summary()
    row = next(r for r in demos.rows if r["kind"] == "repair")
    env = envs.make("code/docstring-v1", max_turns=2)
    task = env.task("train", int(row["task_id"].split("/train/")[1]))
    messages = [Message(**m) for m in row["messages"]]
    env.reset(task)
    wrong, right = [m.content for m in messages if m.role == "assistant"]
    # SFT learns the fix, not the mistake: the wrong attempt is weight 0, the fix weight 1
    assert [m.weight for m in messages if m.role == "assistant"] == [0, 1]
    assert env.step(wrong).messages[0].content == messages[len(task.prompt) + 1].content
    assert task.reference.entry_point + "(" in messages[len(task.prompt) + 1].content
    assert env.step(right).reward == 1.0
