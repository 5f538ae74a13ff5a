import pytest

from tempering import envs
from tempering.envs.math.arith import FAMILIES, verify
from tempering.errors import TaskError, UnknownEnvError


@pytest.fixture(scope="module")
def env():
    return envs.make("math/arith-v1")


def test_check_env_passes():
    report = envs.check_env("math/arith-v1", n=20)
    assert report.ok, report.problems


@pytest.mark.parametrize("reply", ["Answer: {x}", "so the total is \\boxed{{{x}}}", "**Answer:** {x}", "Answer: {x}.0 apples",
                                   "We get {x}."])
def test_verifier_accepts_right_answers(env, reply):
    task = env.task("test", 0)
    assert verify(task, reply.format(x=task.reference)).passed


@pytest.mark.parametrize("reply", ["", "I don't know", "Answer: {wrong}", "\\boxed{{{wrong}}}", "Answer: {x}1"])
def test_verifier_rejects_wrong_and_missing(env, reply):
    task = env.task("test", 0)
    score = verify(task, reply.format(x=task.reference, wrong=int(task.reference) + 1))
    assert not score.passed and score.value == 0.0


def test_final_answer_wins_over_earlier_numbers(env):
    task = env.task("train", 1)
    wrong = int(task.reference) + 3
    assert not verify(task, f"Maybe {task.reference}? No.\nAnswer: {wrong}").passed
    assert verify(task, f"Maybe {wrong}? No.\nAnswer: {task.reference}").passed
    assert verify(task, f"Answer: {task.reference}").details["format_ok"] is True
    assert verify(task, f"It is {task.reference}").details["format_ok"] is False


def test_splits_are_disjoint_and_reproducible(env):
    train = {env.task("train", i).prompt for i in range(300)}
    test = {env.task("test", i).prompt for i in range(300)}
    assert not train & test
    assert len(test) > 250  # few duplicates within a split
    assert env.task("test", 7) == env.task("test", 7)


def test_every_family_generates_and_is_graded(env):
    levels = set()
    for family in env.families:
        task = env.task("train", 0, family)
        assert task.metadata["family"] == family
        assert verify(task, f"Answer: {task.reference}").passed
        levels.add(task.metadata["difficulty"])
    assert levels == {1, 2, 3, 4, 5}
    assert set(env.families) == set(FAMILIES)


def test_answers_are_positive_integers(env):
    for i in range(200):
        assert int(env.task("train", i).reference) >= 0


def test_bad_split_and_family_are_clear_errors(env):
    with pytest.raises(TaskError, match="unknown split"):
        env.task("validation", 0)
    with pytest.raises(TaskError, match="no task family"):
        env.task("train", 0, "calculus")


def test_unknown_env_id():
    with pytest.raises(UnknownEnvError, match="temper envs list"):
        envs.make("math/arith-v9")
