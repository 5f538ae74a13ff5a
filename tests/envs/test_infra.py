"""Infrastructure failures (envs/infra.py): one test says what is one, and InfraRetry re-runs
a verification or an env step of the same reply while its sandbox fails."""

from __future__ import annotations

from tempering.envs.code.humaneval import HumanEvalEnv
from tempering.envs.infra import INFRA_STOP, InfraRetry, is_infra_failure
from tempering.errors import SandboxUnavailable
from tempering.sandbox.fake import CannedSandbox
from tempering.types import ExecResult, Message, Score, StepResult, Task, Turn

LOST = ExecResult("sandbox_error", None, "", "", 0.0, 0.0, 0.0, detail="the fork server died")
RAN = ExecResult("ok", 0, "no verdict\n", "", 0.01, 0.01, 5.0)  # the code ran; the harness saw no pass
TASK = Task("t0", "test", (Message("user", "go"),), None)


def test_what_counts_as_an_infrastructure_failure():
    assert is_infra_failure(Score(0.0, False, {"status": "sandbox_error"}))
    assert is_infra_failure(Score(0.0, False, {"status": "failed", "sandbox_status": "sandbox_error"}))
    assert is_infra_failure(StepResult((), 0.0, False, False, {"status": "sandbox_error", "exit_code": None}))
    assert is_infra_failure({"status": "tests_failed", "sandbox_status": "sandbox_error"})  # a turn's info
    assert is_infra_failure(Turn("reply", (), 0.0, infra_failed=True))
    # the model's own failures are not: a timeout, a memory kill, a wrong answer, a crash
    for status in ("timeout", "memory", "killed", "output_limit", "failed", "wrong", None):
        assert not is_infra_failure(Score(0.0, False, {"status": status, "sandbox_status": status}))
    assert not is_infra_failure(Score(1.0, True, {"status": "sandbox_error"}))  # a pass needed a working sandbox
    assert not is_infra_failure(None)


def test_a_real_verifier_reports_a_lost_sandbox_as_one():
    env = HumanEvalEnv(sandbox=CannedSandbox([LOST]))
    task = env.task("test", 0)
    assert is_infra_failure(env.verify(task, env.reference_response(task)))


def test_verification_is_rerun_on_the_same_reply_until_the_sandbox_works():
    box = CannedSandbox([LOST, RAN])
    env = HumanEvalEnv(sandbox=box)
    task = env.task("test", 0)
    reply = env.reference_response(task)
    score = InfraRetry(env, 2).verify(task, reply)
    assert score.status == "failed" and not is_infra_failure(score) and score.infra_retries == 1
    assert len(box.calls) == 2 and box.calls[0].files == box.calls[1].files  # the same reply both times


def test_a_sandbox_failing_every_try_stops_after_the_retries():
    box = CannedSandbox([LOST], repeat_last=True)
    env = HumanEvalEnv(sandbox=box)
    task = env.task("test", 0)
    score = InfraRetry(env, 2).verify(task, env.reference_response(task))
    assert is_infra_failure(score) and score.infra_retries == 2 and len(box.calls) == 3
    assert is_infra_failure(InfraRetry(HumanEvalEnv(sandbox=CannedSandbox([LOST], repeat_last=True)), 0)
                            .verify(task, "x"))  # 0 retries: one try


class CountingEnv:
    """Counts its turns and keeps a history; step `fail_turn` loses its sandbox `failures` times
    (after counting the turn: the state a failed step leaves behind is half-changed)."""

    id = "test/counting-v0"

    def __init__(self, fail_turn: int, failures: int, raises: bool = False) -> None:
        self.fail_turn, self.failures, self.raises = fail_turn, failures, raises
        self.turn, self.history, self.resets = 0, [], 0

    def reset(self, task):
        self.turn, self.history, self.resets = 0, [], self.resets + 1
        return list(task.prompt)

    def step(self, action):
        self.turn += 1
        self.history.append(action)
        if self.turn == self.fail_turn and self.failures > 0:
            self.failures -= 1
            if self.raises:
                raise SandboxUnavailable("connection refused")
            return StepResult((Message("user", "?"),), 0.0, False, False, {"status": "sandbox_error"})
        return StepResult((Message("user", f"turn {self.turn} ok"),), 0.0, False, False, {"status": "ok"})


def test_a_retried_step_starts_from_the_state_before_it():
    inner = CountingEnv(fail_turn=2, failures=1)
    env = InfraRetry(inner, 2)
    env.reset(TASK)
    env.step("first")
    result = env.step("second")
    assert not is_infra_failure(result) and result.infra_retries == 1
    assert result.messages[0].content == "turn 2 ok"  # not "turn 3": the failed step's turn was undone
    assert inner.history == ["first", "second"] and inner.resets == 2
    assert env.step("third").infra_retries == 0 and inner.turn == 3


def test_a_step_raising_sandbox_unavailable_on_every_try_comes_back_as_an_infra_failure():
    env = InfraRetry(CountingEnv(fail_turn=1, failures=99, raises=True), 1)
    env.reset(TASK)
    result = env.step("first")
    assert is_infra_failure(result) and result.infra_retries == 1
    assert result.truncated and result.truncated_by == INFRA_STOP and "connection refused" in result.info["error"]


def test_a_copy_wraps_a_copy_of_the_env():
    import copy

    env = InfraRetry(CountingEnv(fail_turn=0, failures=0), 2)
    twin = copy.copy(env)
    assert isinstance(twin, InfraRetry) and twin.env is not env.env and twin.retries == 2
    assert twin.id == "test/counting-v0"  # everything else is the env's own
