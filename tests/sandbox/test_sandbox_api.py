"""The sandbox's contract: languages, statuses, limits, sessions, files, the CLI.
Hostile programs live in test_hostile_*.py; load in test_sandbox_load.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time

import pytest

from tempering.errors import SandboxInputError
from tempering.sandbox import Limits
from tempering.sandbox import seccomp

# Far above what the runs need, so a loaded machine cannot turn a pass into a timeout; a
# test of a limit sets that one limit tight (TIGHT_S) and asserts which limit ended the run.
FAST = Limits(wall_s=60, cpu_s=60, memory_mb=256, processes=32, disk_mb=16, compile_wall_s=60, compile_cpu_s=60)
TIGHT_S = 1


@pytest.fixture(scope="module")
def sb(sandbox):
    """The module's sandbox (conftest.py), whose own limits are small: tests that need
    other limits pass them."""
    return sandbox


def test_python_runs_and_reports(sb):
    r = sb.run("import sys\nprint('out'); print('err', file=sys.stderr)")
    assert (r.status, r.exit_code, r.stdout, r.stderr) == ("ok", 0, "out\n", "err\n")
    assert r.wall_s > 0 and r.peak_memory_mb > 0


def test_python_error_keeps_the_traceback_with_source_lines(sb):
    r = sb.run("def f():\n    raise ValueError('boom')\nf()\n")
    assert r.status == "error" and r.exit_code == 1
    assert 'File "/workspace/main.py", line 2, in f' in r.stderr
    assert "raise ValueError('boom')" in r.stderr and r.stderr.rstrip().endswith("ValueError: boom")


@pytest.mark.parametrize("code,exit_code", [("import sys; sys.exit(3)", 3), ("raise SystemExit", 0),
                                            ("import os; os._exit(7)", 7), ("import sys; sys.exit('msg')", 1)])
def test_python_exit_codes(sb, code, exit_code):
    r = sb.run(code)
    assert r.exit_code == exit_code
    assert r.status == ("ok" if exit_code == 0 else "error")


def test_python_atexit_and_threads_finish_before_exit(sb):
    code = ("import atexit, threading, time\n"
            "atexit.register(lambda: print('atexit ran'))\n"
            "t = threading.Thread(target=lambda: (time.sleep(0.2), print('thread done')))\n"
            "t.start()\nprint('main done')\n")
    r = sb.run(code)
    assert r.ok and r.stdout.splitlines() == ["main done", "thread done", "atexit ran"]


def test_stdin_files_and_fetch(sb):
    r = sb.run("import sys\nd = open('in/data.txt').read()\nopen('out.bin','wb').write(bytes(range(256)))\n"
               "print(d + sys.stdin.read())", stdin="-stdin", files={"in/data.txt": "file"}, fetch=["out.bin", "nope"])
    assert r.ok and r.stdout == "file-stdin\n"
    assert r.files == {"out.bin": bytes(range(256))}
    assert "nope" in r.detail


def test_bash(sb):
    r = sb.run("echo $((6*7)); id -u; hostname; pwd; echo $HOME; exit 4", language="bash")
    assert r.status == "error" and r.exit_code == 4
    assert r.stdout.split() == ["42", "1000", "sandbox", "/workspace", "/workspace"]


def test_c_and_cpp_compile_inside_and_run(sb):
    r = sb.run('#include <stdio.h>\nint main(){int x; if(scanf("%d",&x)!=1) return 9; printf("%d\\n", x*2);}',
               language="c", stdin="21")
    assert (r.status, r.stdout) == ("ok", "42\n")
    r = sb.run('#include <iostream>\n#include <vector>\nint main(){std::vector<int> v{1,2,3};'
               ' int s=0; for(int x: v) s+=x; std::cout << s << std::endl;}', language="cpp")
    assert (r.status, r.stdout) == ("ok", "6\n")


def test_compile_error_comes_back(sb):
    r = sb.run("int main() { return undefined_name; }", language="c")
    assert r.status == "error" and r.detail == "compile failed"
    assert "undefined_name" in r.stderr and "undeclared" in r.stderr


@pytest.mark.parametrize(
    "code,limits,status,detail",
    [
        ("import time; time.sleep(3600)", FAST.with_(wall_s=TIGHT_S), "timeout", f"wall time passed {TIGHT_S} s"),
        ("while True: pass", FAST.with_(cpu_s=TIGHT_S), "timeout", f"cpu time passed {TIGHT_S} s"),
        ("x = bytearray(1 << 31)\nfor i in range(0, len(x), 4096): x[i] = 1", FAST.with_(memory_mb=128), "memory",
         None),
        ("while True: print('y' * 1000)", FAST.with_(output_bytes=5000), "output_limit", None),
        ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", FAST, "ok", ""),  # pid 1 ignores it
        ("import ctypes; ctypes.string_at(0)", FAST, "killed", None),
    ],
)
def test_statuses(sb, code, limits, status, detail):
    r = sb.run(code, limits=limits)
    assert r.status == status, r
    if detail is not None:
        assert r.detail == detail, r
    if status == "timeout":
        assert r.exit_code == -9
    if status == "output_limit":
        assert r.truncated and len(r.stdout) == 5000


def test_cpu_limit_counts_every_thread_and_child(sb):
    code = ("import os, threading\n"
            "def spin():\n    while True: pass\n"
            "for _ in range(4): threading.Thread(target=spin, daemon=True).start()\n"
            "if os.fork() == 0: spin()\nspin()\n")
    r = sb.run(code, limits=FAST.with_(cpu_s=TIGHT_S))
    assert (r.status, r.detail) == ("timeout", f"cpu time passed {TIGHT_S} s"), r


def test_session_keeps_workspace_and_snapshots(sb):
    with sb.session("bash") as s:
        assert s.run("echo one > a.txt; mkdir -p d; echo two > d/b.txt").ok
        snap = s.snapshot()
        assert s.run("rm a.txt; echo three > c.txt").ok
        assert s.run("ls").stdout.split() == ["c.txt", "d"]
        s.restore(snap)
        assert s.run("ls").stdout.split() == ["a.txt", "d"]
        s.write_file("w.txt", b"\x00\xffbytes")
        assert s.read_file("w.txt") == b"\x00\xffbytes"
        assert s.read_file("d/b.txt") == b"two\n"
        assert s.run("print(open('a.txt').read().strip())", language="python").stdout == "one\n"
        assert s.run("ls /tmp").stdout == ""  # /tmp is per run
        with pytest.raises(FileNotFoundError):
            s.read_file("missing.txt")
    with pytest.raises(SandboxInputError):
        s.run("true")


def test_sessions_do_not_see_each_other(sb):
    with sb.session("bash") as a, sb.session("bash") as b:
        a.write_file("secret.txt", "a's")
        r = b.run("ls -a /workspace /sessions 2>&1; cat /workspace/secret.txt 2>&1; find / -name secret.txt 2>/dev/null")
        assert "a's" not in r.stdout and "secret.txt" not in r.stdout.replace("cat: /workspace/secret.txt", "")


def test_bad_requests_are_refused_before_running(sb):
    with pytest.raises(SandboxInputError, match="unknown language"):
        sb.run("x", language="cobol")
    for bad in ("../x", "/etc/passwd", "a/../../x", ""):
        with pytest.raises(SandboxInputError):
            sb.run("pass", files={bad: "x"})
    with pytest.raises(ValueError, match="network"):
        Limits(network=True)
    with pytest.raises(ValueError, match="positive"):
        Limits(wall_s=0)


def test_seccomp_filter_shape():
    prog = seccomp.build_filter()
    assert prog[1] == (0x15, 1, 0, seccomp.AUDIT_ARCH_X86_64)  # any other arch is killed
    denied = {k for c, jt, jf, k in prog if c == 0x15}
    assert {101, 321, 298, 323, 250, 175, 313, 246, 272, 308} <= denied
    mounts = {k for c, jt, jf, k in seccomp.build_filter(mounts_only=True) if c == 0x15}
    assert {165, 166, 155} <= mounts


def test_cli_json_prints_one_object_and_leaves_nothing(tmp_path, host_snapshot, foreign_left):
    prog = tmp_path / "p.py"
    prog.write_text("import sys\nprint('hi')\nsys.exit(5)\n")
    before = host_snapshot()
    out = subprocess.run([sys.executable, "-m", "tempering.cli.main", "sandbox", "run", "--json", "--timeout", "5",
                          str(prog)], capture_output=True, text=True, timeout=600)
    if "sandbox runs as root" in out.stderr and os.environ.get("TEMPERING_REQUIRE_SANDBOX") != "1":
        pytest.skip("sandbox unavailable")
    assert out.returncode == 0, out.stderr
    obj = json.loads(out.stdout)  # exactly one JSON document
    assert (obj["status"], obj["exit_code"], obj["stdout"]) == ("error", 5, "hi\n")
    # the CLI's own fork server is gone with its slots and cgroups; other sandboxes on the
    # machine (another test run, say) may come and go meanwhile and do not count
    # (a process the kernel is still tearing down may linger a moment)
    left = foreign_left(before.foreign_nobody)
    assert left == frozenset(), f"uid 65534 processes left outside any fork server: {left}"
    deadline = time.monotonic() + 60
    while (groups := host_snapshot().dead_groups - before.dead_groups) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert groups == frozenset(), f"cgroups of the CLI's server were left behind: {groups}"


def test_host_guard_flags_a_lasting_foreign_process_not_a_passing_one(foreign_left, plant):
    """The guard the hostile tests end with: a uid-65534 process outside every fork server
    that stays is reported; one that exits while the guard re-reads (another xdist worker's
    sandbox caught mid-exit, say) is not."""
    if os.geteuid() != 0:
        pytest.skip("starting a uid-65534 process needs root")
    before = foreign_left(frozenset(), window_s=0)
    stays = plant(["sleep", "600"])
    passing = plant(["sleep", "0.5"])
    # one that another xdist worker planted on purpose for its own guard test
    theirs = subprocess.Popen(["sleep", "600"], user=65534, group=65534, env={"TEMPERING_TEST_PLANTED": "1"})
    reaper = threading.Thread(target=passing.wait)  # reaped once it exits, as a server reaps its slots
    reaper.start()
    try:
        left = {pid for pid, _ in foreign_left(before, window_s=10)}
        assert stays.pid in left and passing.pid not in left, (left, stays.pid, passing.pid)
        assert theirs.pid not in left
    finally:
        for p in (stays, theirs):
            p.kill()
            p.wait()
        reaper.join()
    assert stays.pid not in {pid for pid, _ in foreign_left(before)}


def test_cli_bad_input_exits_2(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "tempering.cli.main", "sandbox", "run", *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=600)
    r = run(str(tmp_path / "missing.py"))
    assert r.returncode == 2 and "no such file" in r.stderr and "Traceback" not in r.stderr
    (tmp_path / "p.py").write_text("print(1)")
    r = run("--language", "cobol", str(tmp_path / "p.py"))
    assert r.returncode == 2 and "unknown language" in r.stderr
    r = run("--timeout", "0", str(tmp_path / "p.py"))
    assert r.returncode == 2 and "positive" in r.stderr


def test_a_killed_server_is_replaced_and_its_leftovers_swept(make_sandbox):
    box = make_sandbox(FAST, pool_size=2)
    try:
        assert box.run("print(1)").ok
        dead = box._proc.pid
        box._proc.kill()
        box._proc.wait()
        first = box.run("print(2)")
        assert first.status in ("sandbox_error", "ok")
        second = box.run("print(3)")
        assert (second.status, second.stdout) == ("ok", "3\n")
        assert box._proc.pid != dead
        # the new server swept the groups the killed one left behind
        # (os.walk skips directories that vanish mid-walk: other servers' runs come and go)
        assert [d for d, subdirs, _ in os.walk("/sys/fs/cgroup") if f"tempering-{dead}" in subdirs] == []
        left = subprocess.run(["pgrep", "-u", "65534", "-P", str(dead)], capture_output=True, text=True).stdout
        assert left.strip() == ""
    finally:
        box.close()
