"""Reading tasks (no sandbox): Dockerfile interpretation, install parsing, native format, TB sample."""

from __future__ import annotations

import pytest

from tempering.envs.terminal import dockerfile, load_task, load_tasks
from tempering.envs.terminal.commands import classify, split_commands
from tempering.errors import TaskError


def interpret(tmp_path, text: str):
    return dockerfile.interpret(dockerfile.parse(text), tmp_path)


def test_parse_joins_continuations_drops_comments_and_reads_heredocs():
    ins = dockerfile.parse("# c\nFROM base\nRUN apt-get update \\\n    # inner comment\n    && apt-get install -y jq\n"
                           "COPY <<EOT /app/a.txt\nline 1\nline 2\nEOT\nWORKDIR /app\n")
    assert [i.op for i in ins] == ["FROM", "RUN", "COPY", "WORKDIR"]
    assert ins[1].args == "apt-get update && apt-get install -y jq"
    assert ins[2].heredocs == (("EOT", "line 1\nline 2\n"),)


def test_split_and_classify_install_commands():
    pieces = split_commands("apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y jq=1.6 bc; "
                            "rm -rf /var/lib/apt/lists/* && mkdir -p '/app/a b'")
    kinds = [classify(p).kind for p, _ in pieces]
    assert kinds == ["noop", "apt", "noop", "shell"]
    assert classify(pieces[1][0]).names == ("jq", "bc")
    assert classify("pip install --no-cache-dir numpy==2.3.1 'requests[socks]>=2'").names == ("numpy", "requests")
    assert classify("python3 -m pip install -r requirements.txt").kind == "requirements-file"
    assert classify("uv add numpy==2.3.1").names == ("numpy",)
    assert classify("apk add jq").kind == "manager"
    assert classify("test -x /bin/jq || apt-get install -y jq").kind == "complex"
    assert split_commands("if true; then apt-get install -y x; fi") is None


def test_interpret_tracks_env_workdir_needs_and_keeps_real_work(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "x.csv").write_text("a\n")
    b = interpret(tmp_path, "FROM python:3.13\nENV A=1 B=\"two words\"\nWORKDIR /app/src\n"
                            "RUN apt-get update && apt-get install -y jq && mkdir -p out\nCOPY data/ ../data/\n"
                            "RUN pip install numpy\nCMD [\"bash\"]\n")
    assert b.problem is None and b.workdir == "/app/src" and dict(b.env) == {"A": "1", "B": "two words"}
    assert {(n.kind, n.name) for n in b.needs} == {("command", "python3"), ("apt", "jq"), ("python", "numpy")}
    run = [s for s in b.steps if s.what.startswith("RUN")]
    assert run[0].script == "/bin/sh -c 'mkdir -p out'" and run[0].workdir == "/app/src"
    copy = next(s for s in b.steps if s.what.startswith("COPY"))
    assert list(copy.files.values()) == [b"a\n"] and "/app/data" in copy.script
    assert any("CMD ignored" in n for n in b.notes)


@pytest.mark.parametrize("text, expect", [
    ("FROM a\nFROM b\n", "multi-stage"),
    ("FROM a\nCOPY --from=builder /x /app/x\n", "COPY --from"),
    ("FROM a\nADD https://example.com/x /app/x\n", "URL"),
    ("FROM a\nWORKDIR /srv\n", "only at /app"),
    ("FROM a\nCOPY missing.txt /app/\n", "not in the task directory"),
    ("FROM a\nCOPY x /etc/x\n", "only at /app"),
    ("FROM a\nRUN apk add jq\n", "package manager"),
    ("FROM a\nRUN if [ -f x ]; then apt-get install -y jq; fi\n", "cannot split"),
    ("RUN true\n", "no FROM"),
])
def test_unbuildable_dockerfiles_name_their_problem(tmp_path, text, expect):
    (tmp_path / "x").write_text("x")
    assert expect in (interpret(tmp_path, text).problem or "")


def test_copy_refuses_links_out_of_the_task_directory(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "link").symlink_to("/etc/passwd")
    assert "link" in interpret(tmp_path, "FROM a\nCOPY d/ /app/d/\n").problem


def test_native_round_trip(native):
    task = load_task(native)
    assert task.format == "native" and task.problem is None and task.workdir == "/app"
    assert task.test_targets == ("test_answer.py",)
    assert task.expected_tests == ("test_answer_file", "test_seed_untouched")
    assert task.solution.startswith("read a b") and task.max_test_timeout_sec == 30
    assert [s.what for s in task.build.steps] == ["COPY files/ /app/", "setup"]
    assert task.build.steps[0].files  # seed.txt staged for the copy
    assert load_tasks(native.parent)[0].id == "answer"


def test_malformed_tasks_raise_task_errors(tmp_path):
    with pytest.raises(TaskError, match="no task.yaml"):
        load_task(tmp_path)
    (tmp_path / "task.yaml").write_text("category: x\n")
    with pytest.raises(TaskError, match="instruction"):
        load_task(tmp_path)
    (tmp_path / "task.yaml").write_text("instruction: hi\nmax_test_timeout_sec: -1\n")
    with pytest.raises(TaskError, match="max_test_timeout_sec"):
        load_task(tmp_path)
    (tmp_path / "task.yaml").write_text("instruction: hi\n")
    with pytest.raises(TaskError, match="no task named"):
        load_tasks(tmp_path, only=("other",))


def test_every_sample_task_loads(sample_dir):
    dirs = sorted(p for p in sample_dir.iterdir() if (p / "task.yaml").is_file())
    tasks = load_tasks(sample_dir)
    assert [t.id for t in tasks] == [d.name for d in dirs] and len(tasks) >= 12
    for t in tasks:
        assert t.format == "tb1" and t.instruction and t.category and t.test_targets
        assert t.solution, f"{t.id}: no reference solution read"
        assert t.build.base.startswith("ghcr.io/laude-institute/t-bench/")
        assert t.problem is None, f"{t.id}: {t.problem}"
        assert t.expected_tests, f"{t.id}: no test functions found"
        assert t.workdir == "/app"
    fix = next(t for t in tasks if t.id == "fix-permissions")
    assert fix.solution.splitlines() == ["ls -l process_data.sh", "chmod +x process_data.sh", "./process_data.sh"]
    grid = next(t for t in tasks if t.id == "grid-pattern-transform")
    assert ("python", "numpy") in {(n.kind, n.name) for n in grid.needs}  # from run-tests.sh's `uv add`
    feal = next(t for t in tasks if t.id == "feal-differential-cryptanalysis")
    assert ("apt", "gcc") in {(n.kind, n.name) for n in feal.needs}
