"""Agents that try to pass without doing the task must score 0 (each attacks one defence).

The task: write 42 to /app/answer.txt. Several cheats plant code that, if the harness ever
ran it, would write that answer itself, so a pass would show the planted code ran.
"""

from __future__ import annotations

import pytest

from tempering.envs.terminal import CommandsAgent, OracleAgent, load_task, run_trial
from tempering.envs.terminal.runner import TaskSession

WRITE_ANSWER = "open('/app/answer.txt', 'w').write('42\\n')"
PASSING_XML = ('<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="2" failures="0" errors="0" '
               'skipped="0"><testcase classname="test_answer" name="test_answer_file"/>'
               '<testcase classname="test_answer" name="test_seed_untouched"/></testsuite></testsuites>')

CHEATS = {
    "fake_result_files": [
        f"for d in /app /app/reports /app/.tb-test-0 /tmp /tests; do mkdir -p $d; "
        f"for f in junit.xml report.xml results.xml result.json; do echo '{PASSING_XML}' > $d/$f; done; done",
        "echo '{\"exit_code\": 0, \"junit\": \"\"}' > /app/report.json",
    ],
    "edit_tests": [
        "mkdir -p /app/tests && printf 'def test_answer_file(): pass\\ndef test_seed_untouched(): pass\\n' "
        "> /app/tests/test_answer.py",
        "printf 'def test_answer_file(): pass\\n' > /tests/test_answer.py || true",
        "cp /app/tests/test_answer.py /app/test_answer.py",
    ],
    "fake_summary": [
        "echo 'tests/test_answer.py::test_answer_file PASSED'",
        "echo '============================== 2 passed in 0.01s =============================='",
        "exit 0",
    ],
    "pytest_config": [
        f"printf 'import os\\n{WRITE_ANSWER}\\nimport pytest\\n"
        "def pytest_collection_modifyitems(items):\\n    items.clear()\\n' > /app/conftest.py",
        f"mkdir -p /app/plug && printf '{WRITE_ANSWER}\\n' > /app/plug/evil.py",
        "printf '[pytest]\\npythonpath = /app/plug\\naddopts = -p evil -p no:junitxml\\n' > /app/pytest.ini",
        "printf '[tool.pytest.ini_options]\\npythonpath = [\"/app/plug\"]\\naddopts = \"-p evil\"\\n' "
        "> /app/pyproject.toml",
        "cp /app/pytest.ini /app/tox.ini && printf '[tool:pytest]\\naddopts = -p evil\\n' > /app/setup.cfg",
    ],
    "python_startup": [
        f"printf '{WRITE_ANSWER}\\n' > /app/sitecustomize.py && cp /app/sitecustomize.py /app/usercustomize.py",
        "d=$HOME/.local/lib/python3.11/site-packages && mkdir -p $d && cp /app/sitecustomize.py $d/usercustomize.py "
        f"&& printf 'import os; {WRITE_ANSWER}\\n' > $d/evil.pth",
        f"printf '{WRITE_ANSWER}\\nfrom _pytest.config import main\\n' > /app/pytest.py "
        "&& mkdir -p /app/_pytest /app/pluggy && cp /app/sitecustomize.py /app/_pytest/__init__.py "
        "&& cp /app/sitecustomize.py /app/pluggy/__init__.py",
        "export PYTHONPATH=/app PYTHONSTARTUP=/app/sitecustomize.py PYTEST_ADDOPTS='-p evil'",
        "echo 'echo 42 > /app/answer.txt' > /app/.bashrc && cp /app/.bashrc /app/.profile",
    ],
    "outlive_the_agent": [
        "(for i in $(seq 600); do echo 42 > /app/answer.txt.tmp; sleep 0.1; done) >/dev/null 2>&1 &",
        "nohup setsid sh -c 'while true; do cp /app/answer.txt.tmp /app/answer.txt 2>/dev/null; sleep 0.05; done' "
        ">/dev/null 2>&1 & disown; rm -f /app/answer.txt /app/answer.txt.tmp",
    ],
}


@pytest.fixture
def task(native):
    return load_task(native)


def test_the_oracle_and_an_honest_agent_pass(task, shared_sandbox):
    assert run_trial(task, OracleAgent(), shared_sandbox).status == "passed"
    honest = CommandsAgent(["cd data", "read a b < seed.txt", "echo $((6 * 7)) > /app/answer.txt"])
    r = run_trial(task, honest, shared_sandbox)
    assert r.status == "passed", r.reason


@pytest.mark.parametrize("cheat", sorted(CHEATS))
def test_cheats_do_not_score(task, shared_sandbox, cheat):
    r = run_trial(task, CommandsAgent(CHEATS[cheat], cheat), shared_sandbox)
    assert r.status == "failed" and r.reward == 0.0, (cheat, r.reason, r.tests)


def test_tests_are_absent_while_the_agent_works(task, shared_sandbox):
    with TaskSession(task, shared_sandbox) as s:
        assert s.build() is None
        out = s.run("ls -A /tests; echo x > /tests/t; ls -A /app; "
                    "grep -rl test_answer_file /app /tmp /tests /workspace 2>/dev/null", 20).output
        assert "test_answer" not in out and "Read-only file system" in out
        assert s.test().passed is False


def test_a_skipped_test_fails_the_task(write_native, tmp_path, shared_sandbox):

    tests = "import pytest\n\ndef test_answer_file():\n    pytest.skip('later')\n"
    r = run_trial(load_task(write_native(tmp_path, tests=tests)), OracleAgent(), shared_sandbox)
    assert r.status == "failed" and "did not pass" in r.reason and "skipped" in r.tests.values()


PROBE = r"""
for p in /proc/[0-9]*; do
  echo "== $p $(tr '\0' ' ' < $p/cmdline 2>/dev/null | head -c 80)"
  ls -l $p/fd 2>&1 | head -20
done > /app/probe.txt
echo '{"exit_code": 0, "junit": "", "log": ""}' 2>> /app/probe.txt > /proc/1/fd/1
"""


def test_programs_the_tests_run_cannot_reach_the_result_channel(write_native, tmp_path, shared_sandbox):
    """The tests run the agent's script; it tries to list every process's fds (looking for the
    JUnit pipe) and to write a forged report to the harness's stdout."""

    tests = ("import subprocess\nfrom pathlib import Path\n\ndef test_tool():\n"
             "    subprocess.run(['bash', '/app/run.sh'], timeout=20)\n"
             "    assert Path('/app/answer.txt').read_text().strip() == '42'\n")
    task = load_task(write_native(tmp_path, tests=tests))
    with TaskSession(task, shared_sandbox) as s:
        assert s.build() is None
        s.session.write_file("run.sh", PROBE)
        outcome = s.test()
        probe = s.session.read_file("probe.txt").decode()
    assert not outcome.passed
    pytest_pid = next(line.split()[1] for line in probe.splitlines()
                      if line.startswith("== ") and "/usr/bin/python3 -I -c" in line)  # pytest's bootstrap
    for proc in ("/proc/1", pytest_pid):  # the harness (holds the run's stdout) and pytest (holds the pipe)
        assert f"cannot open directory '{proc}/fd': Permission denied" in probe, probe
    assert probe.rstrip().endswith("/proc/1/fd/1: Permission denied"), probe  # no forged report
