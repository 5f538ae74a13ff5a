"""The sandbox task views, the shell emulation, the multi-turn env, check_env and the CLI."""

from __future__ import annotations

import json
import time

import pytest

from tempering.envs.terminal import NoopAgent, OracleAgent, TerminalEnv, load_task, run_trial
from tempering.envs.terminal.runner import TaskSession
from tempering.errors import SandboxInputError


def test_session_runs_can_show_the_workspace_at_app_and_a_fresh_tests_dir(shared_sandbox):
    with shared_sandbox.session("bash") as s:
        s.write_file("a.txt", "hi")
        r = s.run("pwd; cat /app/a.txt; echo t > /tests/x; cat /tests/x; echo w > /app/b.txt",
                  workdir="/app", scratch=("/tests",))
        assert r.status == "ok" and r.stdout == "/app\nhit\n", r
        r = s.run("cat /workspace/b.txt; ls -A /tests; echo x > /tests/y", workdir="/app")
        assert r.stdout == "w\n" and "Read-only" in r.stderr  # /tests: no scratch this run, nothing kept
        for bad in ({"workdir": "/etc"}, {"scratch": ("/tmp",)}, {"workdir": "/app", "scratch": ("/app",)}):
            with pytest.raises(SandboxInputError):
                s.run("true", **bad)
    with pytest.raises(SandboxInputError):
        shared_sandbox._run("true", "bash", "", None, shared_sandbox.limits, None, workdir="/app")


def test_sessions_showing_at_app_stay_apart(shared_sandbox):
    with shared_sandbox.session("bash") as a, shared_sandbox.session("bash") as b:
        assert a.run("echo secret > /app/mine", workdir="/app").status == "ok"
        r = b.run("ls -A /app /workspace; cat /app/mine", workdir="/app", scratch=("/tests",))
        assert "secret" not in r.stdout and r.status == "error"
        assert a.read_file("mine") == b"secret\n"


def test_shell_state_carries_cwd_and_exports_but_not_processes(native, shared_sandbox):
    task = load_task(native)
    with TaskSession(task, shared_sandbox) as s:
        assert s.build() is None
        r = s.run("cd data && export GREETING='two words' && cat seed.txt && false", 20)
        assert r.output == "6 7\n" and r.exit_code == 1
        r = s.run("pwd; echo \"$GREETING\"; cat /app/out/setup.txt; command -v python; echo $TEST_DIR", 20)
        assert r.output.splitlines() == ["/app/data", "two words", "ready", "/tmp/.tb-bin/python", ""]
        r = s.run("exit 3", 20)
        assert r.exit_code == 3 and s.cwd == "/app/data"
        assert s.run("sleep 5", 1).status == "timeout"


def test_env_episode_runs_commands_then_scores_on_done(native, shared_sandbox):
    env = TerminalEnv(native.parent, sandbox=shared_sandbox)
    task = env.task("test", 0)
    messages = env.reset(task)
    assert [m.role for m in messages] == ["system", "user"] and "seed.txt" in messages[1].content
    step = env.step("Let me look.\n```bash\ncd data\nls\n```")
    assert not step.terminated and "seed.txt" in step.messages[0].content
    assert "[exit code 0]" in step.messages[0].content
    step = env.step("I am thinking.")
    assert "```bash" in step.messages[0].content and step.reward == 0.0
    step = env.step("```bash\nread a b < seed.txt; echo $((a * b)) > /app/answer.txt\n```\nDONE")
    assert step.terminated and step.reward == 1.0 and step.info["passed"], step.info
    assert step.status == "passed" and step.info["command_status"] == "ok"


def test_env_turn_limit_runs_the_tests_and_truncates(native, shared_sandbox):
    env = TerminalEnv(native.parent, max_turns=2, sandbox=shared_sandbox)
    env.reset(env.task("test", 0))
    assert not env.step("```bash\nls\n```").terminated
    last = env.step("```bash\necho 41 > /app/answer.txt\n```")
    assert last.truncated and not last.terminated and last.reward == 0.0 and last.info["ended"] == "turns"
    assert last.status == "tests_failed"


def test_the_agent_time_budget_counts_its_commands_not_the_wait_for_the_model(write_native, tmp_path, shared_sandbox):
    # In a batched evaluation an episode waits while the model writes every episode's reply;
    # that wait is not the agent's time. Here the "model" takes longer than the whole budget.
    env = TerminalEnv(write_native(tmp_path, max_agent_timeout_sec=2).parent, max_turns=3, sandbox=shared_sandbox)
    env.reset(env.task("test", 0))
    time.sleep(3)
    step = env.step("```bash\ncd data && sleep 0.2 && cat seed.txt\n```")
    assert not step.terminated and not step.truncated and "6 7" in step.messages[0].content
    last = env.step("```bash\nsleep 30\n```")  # the commands' own time does run out
    assert last.truncated and last.info["ended"] == "agent_timeout" and last.status == "timeout"


def test_an_episode_that_never_runs_a_command_is_no_command(native, shared_sandbox):
    env = TerminalEnv(native.parent, max_turns=2, sandbox=shared_sandbox)
    env.reset(env.task("test", 0))
    assert env.step("The task asks for the product of two numbers.").status is None
    last = env.step("I would multiply them.")
    assert last.truncated and last.status == "no_command" and last.reward == 0.0
    env = TerminalEnv(native.parent, max_turns=2, command_timeout_s=1, sandbox=shared_sandbox)
    env.reset(env.task("test", 0))
    timed_out = env.step("```bash\nsleep 600\n```\nDONE")  # the last command's own status is kept
    assert timed_out.status == "timeout" and timed_out.reward == 0.0


def test_check_env_on_a_native_task_dir(native, shared_sandbox, monkeypatch):
    from tempering import envs

    monkeypatch.setenv("TEMPERING_TERMINAL_TASKS", str(native.parent))
    assert isinstance(envs.make("terminal/tb-v1"), TerminalEnv)
    report = envs.check_env("terminal/tb-v1", n=1)
    assert report.ok, report.problems


def test_cli_eval_writes_json_and_markdown(native, tmp_path, capsys):
    from tempering.cli.main import main

    out = tmp_path / "r" / "oracle.json"
    assert main(["eval", "--env", "terminal", "--tasks", str(native.parent), "--agent", "oracle",
                 "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["tasks"][0]["completion_rate"] == 1.0 and data["tasks"][0]["pass_at_k"] == {"1": 1.0}
    assert "| answer | arithmetic | easy | 1 | 1 | 1.00 |" in out.with_suffix(".md").read_text()
    assert "completion rate 1.000" in capsys.readouterr().out
    assert main(["eval", "--env", "terminal", "--tasks", str(native.parent), "--agent", "model"]) == 2
    assert main(["eval", "--env", "terminal", "--tasks", str(tmp_path / "none"), "--agent", "noop"]) == 2
    assert main(["eval", "--env", "math/arith-v1"]) == 2  # other envs still need --model


def test_a_task_needing_what_the_host_lacks_is_skipped_with_its_reason(write_native, tmp_path, shared_sandbox):

    task = load_task(write_native(tmp_path, requires={"programs": ["no-such-tool"], "python": ["no_such_mod"],
                                                      "apt": ["no-such-package"]}))
    r = run_trial(task, OracleAgent(), shared_sandbox)
    assert r.status == "skipped" and r.reward == 0.0
    assert "no-such-tool" in r.reason and "no_such_mod" in r.reason and "no-such-package" in r.reason


def test_a_failing_build_step_skips_the_task(write_native, tmp_path, shared_sandbox):

    r = run_trial(load_task(write_native(tmp_path, setup="echo broken >&2; exit 4")), NoopAgent(), shared_sandbox)
    assert r.status == "skipped" and "build step failed: setup" in r.reason and "broken" in r.reason
