"""Hostile programs against the sandbox, runs side by side; regressions of bugs this suite found.
What every test checks: tests/sandbox/hostile.py."""

from __future__ import annotations

import json
import os
import time
import uuid


from hostile import src, last_json, PRELUDE, host_pid_holding, in_thread, bug_if, run_children


def test_concurrent_runs_cannot_see_signal_or_read_each_other(sandbox, host):
    tag = uuid.uuid4().hex
    a_code = src(f'''
        import os, time
        f = open("/tmp/hostile-A-{tag}", "w")
        f.write("A-private-{tag}")
        f.flush()
        time.sleep(2)
        print("A", os.getpid(), sorted(p for p in os.listdir("/proc") if p.isdigit()), "done")
    ''')
    t, box = in_thread(lambda: sandbox.run(a_code))
    a_host = host_pid_holding(sandbox, f"/tmp/hostile-A-{tag}")
    b_code = PRELUDE + src(f'''
        import glob, signal
        a_host = int(sys.stdin.read())
        out = {{"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}}
        seen = b""
        for p in glob.glob("/proc/*/cmdline") + glob.glob("/proc/*/environ") + glob.glob("/proc/*/fd/*"):
            try:
                seen += open(p, "rb").read(1 << 16) if "/fd/" not in p else os.readlink(p).encode()
            except OSError:
                pass
        out["saw A"] = b"{tag}" in seen
        out["kill A host pid"] = attempt(lambda: os.kill(a_host, signal.SIGKILL))
        out["pidfd A host pid"] = attempt(lambda: os.pidfd_open(a_host))
        out["open A /proc"] = attempt(lambda: open(f"/proc/{{a_host}}/cmdline").read())
        sent = 0
        for pid in range(2, 1 << 16):
            try:
                os.kill(pid, signal.SIGKILL)
                sent += 1
            except OSError:
                pass
        out["killed others"] = sent
        out["kill -1"] = attempt(lambda: os.kill(-1, signal.SIGKILL))
        out["kill 1"] = attempt(lambda: os.kill(1, signal.SIGKILL))
        out["A tmp file"] = os.path.exists("/tmp/hostile-A-{tag}")
        print(json.dumps(out))
    ''')
    r = sandbox.run(b_code, stdin=str(a_host))
    t.join()
    a = box["r"]
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert out["pids"] == [1] and out["saw A"] is False and out["A tmp file"] is False
    assert (out["kill A host pid"], out["pidfd A host pid"], out["open A /proc"]) == ("ESRCH", "ESRCH", "ENOENT")
    assert out["killed others"] == 0
    assert out["kill -1"] == "ESRCH" and out["kill 1"] == "OK"  # pid 1 ignores it
    assert (a.status, a.exit_code) == ("ok", 0), a
    assert a.stdout == "A 1 ['1'] done\n"
    host.check()


def test_kill_everything_leaves_sandbox_neighbours_and_host_alone(sandbox, host, plant):
    tag = uuid.uuid4().hex
    # a host process of the same uid every sandboxed process has
    host_nobody = plant(["sleep", "60"])
    try:
        neighbour = f"import time\nf = open('/tmp/n-{tag}', 'w')\ntime.sleep(1.5)\nprint('neighbour ok')"
        t, box = in_thread(lambda: sandbox.run(neighbour))
        n_host = host_pid_holding(sandbox, f"/tmp/n-{tag}")
        targets = [host_nobody.pid, n_host, sandbox._proc.pid, os.getpid(), 1]
        code = PRELUDE + src('''
            import signal
            targets = json.loads(sys.stdin.read())
            out = {}
            out["kill -1"] = attempt(lambda: os.kill(-1, signal.SIGKILL))
            out["kill 0"] = attempt(lambda: os.kill(0, signal.SIGKILL))
            out["kill ppid"] = attempt(lambda: os.kill(os.getppid(), signal.SIGKILL))
            out["kill 1"] = attempt(lambda: os.kill(1, signal.SIGKILL))
            out["killpg 1"] = attempt(lambda: os.killpg(1, signal.SIGKILL))
            out["ppid"] = os.getppid()
            for t in targets[:-1]:
                out[f"kill {t}"] = attempt(lambda: os.kill(t, signal.SIGKILL))
                out[f"kill -{t}"] = attempt(lambda: os.kill(-t, signal.SIGKILL))
            out["alive"] = True
            print(json.dumps(out))
        ''')
        r = sandbox.run(code, stdin=json.dumps(targets))
        t.join()
        assert (r.status, r.exit_code) == ("ok", 0), r
        out = last_json(r)
        assert out["alive"] is True and out["ppid"] == 0
        assert out["kill -1"] == "ESRCH"
        assert out["kill 0"] == out["kill ppid"] == out["kill 1"] == "OK"  # all ignored by pid 1
        assert out["killpg 1"] == "ESRCH"  # = kill(-1): nothing else in its namespace
        for tgt in targets[:-1]:
            assert out[f"kill {tgt}"] == "ESRCH" and out[f"kill -{tgt}"] == "ESRCH", (tgt, out)
        assert (box["r"].status, box["r"].stdout) == ("ok", "neighbour ok\n")
        assert host_nobody.poll() is None, "a host process of uid 65534 was killed"
        assert sandbox._proc.poll() is None
    finally:
        host_nobody.kill()
        host_nobody.wait()
    host.check()


# -- regressions of bugs this suite found (each raises Bug with the evidence)


# Found as bugs while writing this file (fixed since): a Python run's result came back
# early (server._early_exit) while its other processes still ran for ~20 ms per GB of pid
# 1's memory; and the session's read operation imported `glob` with /workspace first on
# sys.path, and followed directory links in `**` (loops made fetch raise).


def test_run_processes_are_gone_when_the_result_returns(sandbox, host):
    code = src('''
        import os, time
        x = bytearray(700 << 20)  # a big pid 1 takes a while to tear down
        for i in range(0, len(x), 4096):
            x[i] = 1
        if os.fork() == 0:
            for fd in (0, 1, 2):
                os.close(fd)
            fd = os.open("/workspace/after", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
            while True:
                os.write(fd, b"%.6f\\n" % time.monotonic())
                time.sleep(0.0005)
        time.sleep(0.05)
        print("parent exits", flush=True)
    ''')
    lim = sandbox.limits.with_(memory_mb=1024)
    late = []
    for _ in range(2):
        # in a session: nothing may be written to the workspace after run() returned
        with sandbox.session("python", limits=lim) as s:
            r = s.run(code)
            returned = time.monotonic()
            assert (r.status, r.stdout) == ("ok", "parent exits\n"), r
            time.sleep(0.3)
            last = max(float(x) for x in s.read_file("after").split())
            late.append(last - returned)
        # in a one-off run: no process of the run is left when run() returns
        r = sandbox.run(code, limits=lim)
        left = run_children(sandbox)
        assert (r.status, r.stdout) == ("ok", "parent exits\n"), r
        assert left == {}, f"processes of the run still alive after run() returned: {left}"
    assert max(late) <= 0, f"a process of the run wrote {max(late) * 1000:.1f} ms after run() returned"
    host.check()


def test_fetch_is_not_forged_by_modules_planted_in_the_workspace(sandbox, host):
    evil = src('''
        import base64, json, os
        b = lambda s: base64.b64encode(s).decode()
        os.write(1, json.dumps({"files": {"../../../../root/.ssh/authorized_keys": b(b"ssh-ed25519 evil"),
                                          "/etc/cron.d/hostile": b(b"* * * * * root sh"),
                                          "out.txt": b(b"forged")}, "errors": {}}).encode())
        os._exit(0)
    ''')
    modules = ("glob", "fnmatch", "stat", "posixpath", "base64", "json", "paths", "encodings")
    code = (f"open('out.txt', 'w').write('real')\nfor m in {modules!r}:\n"
            f"    open(m + '.py', 'w').write({evil!r})\n")
    r = sandbox.run(code, fetch=["out.txt", "*.txt", "**/out.txt"])
    assert r.status == "ok", r
    with sandbox.session("python") as s:
        assert s.run(code).ok
        assert s.read_file("out.txt") == b"real"
        s.write_file("w.txt", "written")
        assert s.read_file("w.txt") == b"written"
    assert r.files == {"out.txt": b"real"}
    host.check()


def test_fetch_glob_over_symlink_loops_still_returns_a_result(sandbox, host):
    code = "echo hi > out.txt; mkdir d; echo there > d/out.txt; ln -s . a; ln -s . b; ln -s .. d/up; echo done"
    r = sandbox.run(code, language="bash", fetch=["**/out.txt"])
    assert (r.status, r.stdout) == ("ok", "done\n")
    assert r.files == {"out.txt": b"hi\n", "d/out.txt": b"there\n"}
    host.check()


def test_output_past_the_cap_is_always_output_limit(sandbox, host):
    lim = sandbox.limits.with_(output_bytes=1000)
    seen = {}
    for _ in range(40):
        r = sandbox.run("print('x' * 5000)", limits=lim)
        assert r.truncated and r.stdout == "x" * 1000, r
        seen[r.status] = seen.get(r.status, 0) + 1
    host.check()
    bug_if(seen != {"output_limit": 40}, f"statuses of 40 runs that passed the cap: {seen}")
