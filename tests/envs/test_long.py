"""envs.long and code/project-v1: subtasks, their state, artifacts, RECALL and compression."""

from __future__ import annotations

import pytest

from tempering.envs import check_env, make
from tempering.envs.code.project import KINDS, SHAPES, ProjectEnv
from tempering.envs.code.synth import FAMILIES
from tempering.errors import TaskError


def fence(code: str) -> str:
    return f"```python\n{code}```"


def wrong(name: str) -> str:
    return fence(f"def {name}(*args):\n    return None\n")


def words(text: str) -> int:
    return len(text.split())


@pytest.fixture
def env(shared_sandbox):
    return ProjectEnv(max_attempts=2, max_recalls=2)


@pytest.fixture
def chain(env):
    task = env.task("train", 0, family="chain")
    assert [s.name for s in task.reference.subtasks][-1] == "pipeline"
    return task


def test_composable_families_exist_and_take_one_argument():
    by_name = {f.name: f for f in FAMILIES}
    assert set(KINDS) <= set(by_name)
    assert all(by_name[n].signature.count(":") == 1 for n in KINDS)
    assert ProjectEnv().families == SHAPES


def test_check_env_passes():
    report = check_env("code/project-v1", n=3)
    assert report.ok, report.problems
    assert report.checked == 6


def test_reference_passes_every_step_one_per_turn(env, chain):
    steps = chain.reference.subtasks
    env.reset(chain)
    for i, sub in enumerate(steps):
        result = env.step(fence(sub.check.reference))
        assert result.reward == pytest.approx(1 / len(steps))
        assert result.terminated == (i == len(steps) - 1)
    assert result.info["passed"] and result.info["progress"] == 1.0
    assert [s["status"] for s in result.info["subtasks"]] == ["passed"] * len(steps)
    assert [s.attempts for s in env.states] == [1] * len(steps)


def test_an_empty_answer_scores_zero_and_costs_an_attempt(env, chain):
    assert env.verify(chain, "").value == 0.0
    env.reset(chain)
    result = env.step("")
    assert result.reward == 0.0 and not result.terminated
    assert "Your reply is empty." in result.messages[0].content
    assert env.states[0].attempts == 1 and env.states[0].status == "open"


def test_the_last_step_calls_the_earlier_steps_code(env, chain):
    a, b, pipeline = chain.reference.subtasks
    env.reset(chain)
    env.step(fence(a.check.reference))
    env.step(fence(b.check.reference))
    assert "def pipeline" in pipeline.check.reference and a.name not in pipeline.check.reference.split("return")[0]
    last = env.step(fence(pipeline.check.reference))  # defines pipeline only: a and b come from earlier turns
    assert last.terminated and last.info["passed"]


def test_a_failing_step_gets_feedback_then_is_given_up_and_the_next_opens(env, chain):
    a, b, _ = chain.reference.subtasks
    env.reset(chain)
    first = env.step(wrong(a.name))
    assert "failed an example" in first.messages[0].content and "attempt 2 of 2" in first.messages[0].content
    assert env.states[0].status == "open" and env.states[1].status == "pending"
    second = env.step(wrong(a.name))
    text = second.messages[0].content
    assert "out of attempts" in text and f"Step 2 of 3 ({b.name})" in text
    assert [s.status for s in env.states] == ["failed", "open", "pending"]
    assert second.reward == 0.0 and second.info["subtasks"][0] == {"name": a.name, "status": "failed", "attempts": 2}


def test_hidden_failures_are_counted_never_shown(env, chain):
    a = chain.reference.subtasks[0]
    visible = a.check.cases[:3]
    table = {repr(c["args"]): c["expected"] for c in visible}
    memoriser = fence(f"def {a.name}(*args):\n    return {table!r}.get(repr(list(args)))\n")
    env.reset(chain)
    text = env.step(memoriser).messages[0].content
    assert "passed the examples but failed 10 of 10 hidden tests" in text
    hidden = [repr(x) for c in a.check.cases[3:] for x in c["args"] if len(repr(x)) > 4]
    assert not [h for h in hidden if h in text]
    assert not [h for h in hidden if h in env.store.latest("log").text]


def test_a_recall_returns_an_earlier_code_version_without_grading(env, chain):
    a = chain.reference.subtasks[0]
    env.reset(chain)
    env.step(wrong(a.name))  # turn 1: version 1
    env.step(fence(a.check.reference))  # turn 2: version 2 passes
    assert env.store.get(a.name, 1, "code") == f"def {a.name}(*args):\n    return None\n"
    result = env.step(f"Let me check my first try.\nRECALL {a.name}/1/code\nRECALL {a.name}/1/log\nRECALL nope/1/code")
    text = result.messages[0].content
    assert f"RECALL {a.name}/1/code:\ndef {a.name}(*args):\n    return None" in text
    assert f"RECALL {a.name}/1/log:\nstatus: failed" in text
    assert "RECALL nope/1/code: no such artifact; available:" in text and f"{a.name}/2/code" in text
    assert result.reward == 0.0 and result.info["recalled"] == [f"{a.name}/1/code", f"{a.name}/1/log", "nope/1/code"]
    assert env.states[1].attempts == 0  # not graded


def test_recalls_past_the_limit_are_graded(env, chain):
    env.reset(chain)
    env.step("RECALL code")
    env.step("RECALL code")
    third = env.step("RECALL code")
    assert env.states[0].attempts == 1 and "recalled" not in third.info


def test_context_messages_stay_within_the_budget_and_keep_the_open_step(env, chain):
    a, b, _ = chain.reference.subtasks
    env.reset(chain)
    goal = env.context_messages(words, 10_000)
    assert goal == env.history  # fits: unchanged, and the brief at reset is the first prompt
    env.step(fence(a.check.reference))
    body = "".join(f"    x{i} = {i}\n" for i in range(80))
    noisy = fence(f"# Decision: keep it simple\ndef {b.name}(*args):\n{body}    return None\n")
    env.step(noisy)
    latest = wrong(b.name)
    env.step(latest)  # out of attempts at step 2: pipeline opens
    full = sum(words(m.content) for m in env.history)
    budget = sum(words(m.content) for m in env.context_messages(words, 10_000)) - 60
    out = env.context_messages(words, budget)
    assert sum(words(m.content) for m in out) <= budget < full
    assert "Step 3 of 3 (pipeline)" in out[0].content and f"{b.name} failed" in out[0].content
    assert latest in [m.content for m in out]
    assert any(f"def {b.name}(*args):" in m.content and "x40 = 40" not in m.content for m in out)
    with pytest.raises(TaskError, match="budget of 10 tokens"):
        env.context_messages(words, 10)


def test_registered():
    assert make("code/project-v1").id == "code/project-v1"


def test_shallow_copies_after_reset_share_no_episode_state(env, chain):
    import copy

    one, two = copy.copy(env), copy.copy(env)  # how the trainer makes one env per episode
    one.reset(chain)
    two.reset(chain)
    one.step(wrong(chain.reference.subtasks[0].name))
    assert one.states[0].attempts == 1 and len(one.store) == 2
    assert two.states[0].attempts == 0 and len(two.store) == 0 and len(two.history) == 1
