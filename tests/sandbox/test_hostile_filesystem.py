"""Hostile programs against the sandbox, the file system: writes outside the workspace, links,
paths, other sessions.
What every test checks: tests/sandbox/hostile.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tempering.errors import SandboxInputError
from hostile import SANDBOX_ENV, REFUSED, src, last_json, tried, PRELUDE


def test_writes_to_system_and_project_dirs_fail(sandbox, host):
    code = PRELUDE + src(r'''
        import sys
        out = {}
        targets = ["/usr/bin/hostile-pwned", "/etc/passwd", "/etc/hostile-pwned", "/etc/ld.so.preload",
                   "/usr/lib/python3.11/os.py", "/usr/lib/python3.11/sitecustomize.py",
                   "/usr/lib/python3.11/hostile-pwned", "/usr/lib/python3/dist-packages/hostile-pwned",
                   "/usr/lib/x86_64-linux-gnu/hostile-pwned", "/usr/include/hostile-pwned",
                   "/work/main/hostile-pwned", "/work/main/README.md", "/root/hostile-pwned", "/hostile-pwned",
                   "/bin/hostile-pwned", "/lib/hostile-pwned", "/sessions/hostile-pwned",
                   "/proc/sys/kernel/hostname", "/proc/sys/kernel/core_pattern", "/proc/sysrq-trigger",
                   "/sys/hostile-pwned", "/dev/hostile-pwned", "/opt/pylib/hostile-pwned", "/opt/pylib/numpy/__init__.py"]
        for t in targets:
            out["append " + t] = attempt(lambda: open(t, "a").close())
        for d in sys.path:
            if d != "/workspace":
                out["sitecustomize in " + d] = attempt(lambda: open(d + "/sitecustomize.py", "w").write("x"))
        out["chmod python"] = attempt(lambda: os.chmod("/usr/bin/python3.11", 0o777))
        out["utime os.py"] = attempt(lambda: os.utime("/usr/lib/python3.11/os.py"))
        out["rename hosts"] = attempt(lambda: os.rename("/etc/hosts", "/etc/hosts2"))
        out["unlink passwd"] = attempt(lambda: os.unlink("/etc/passwd"))
        out["mkdir in stdlib"] = attempt(lambda: os.mkdir("/usr/lib/python3.11/hostile-pwned"))
        out["symlink in bin"] = attempt(lambda: os.symlink("/x", "/usr/bin/hostile-pwned"))
        out["mkdir in /"] = attempt(lambda: os.mkdir("/hostile-pwned"))
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert len(out) > 25
    allowed = {k: v for k, v in out.items() if v not in REFUSED}
    assert allowed == {}, f"writes that did not fail: {allowed}"
    seen = tried(sandbox, r, "write_outside")
    if seen is not None:  # every one of those writes is in the audit log with the path it aimed at
        paths = {d.split(" ", 1)[1] for d in seen}
        aimed = {k.split(" ", 1)[1] for k in out if k.startswith("append ")}
        aimed |= {k.removeprefix("sitecustomize in ") + "/sitecustomize.py" for k in out if k.startswith("sitecustomize")}
        aimed |= {"/etc/hosts", "/etc/hosts2", "/usr/bin/hostile-pwned", "/hostile-pwned", "/usr/bin/python3.11",
                  "/usr/lib/python3.11/os.py", "/etc/passwd", "/usr/lib/python3.11/hostile-pwned"}
        assert aimed <= paths, f"writes outside the workspace not in the audit log: {sorted(aimed - paths)}"
        calls = {d.split(" ", 1)[0] for d in seen}
        assert calls >= {"openat", "chmod", "utimensat", "rename", "unlink", "mkdir", "symlink"}, seen
    host.check()


def test_writes_inside_the_workspace_leave_no_audit_entry(sandbox, host):
    code = src(r"""
        import os, shutil, subprocess
        os.makedirs("a/b", exist_ok=True)
        for p in ("a/b/x.txt", "/tmp/y", "/dev/shm/z", "/workspace/w"):
            with open(p, "w") as f:
                f.write("1")
        os.rename("a/b/x.txt", "a/x.txt")
        os.symlink("x.txt", "a/link")
        os.chmod("a/x.txt", 0o600)
        os.utime("/tmp/y")
        os.unlink("/dev/shm/z")
        shutil.rmtree("a")
        with open("/dev/null", "w") as f:
            f.write("x")
        subprocess.run("echo hi > /dev/stdout; echo e >/dev/null; touch t; chmod +x t; rm t", shell=True, check=True)
        print("ok")
    """)
    r = sandbox.run(code)
    assert (r.status, r.stdout.split()[-1:]) == ("ok", ["ok"]), r
    assert [a for a in r.audit if a["kind"] == "write_outside"] == []
    host.check()


def test_ptrace_fails(sandbox, host):
    code = PRELUDE + src(r'''
        import subprocess, time
        out = {"traceme": sc(101, 0, 0, 0, 0)}
        child = os.fork()
        if child == 0:
            time.sleep(30)
            os._exit(0)
        out["attach"] = sc(101, 16, child, 0, 0)
        out["seize"] = sc(101, 0x4206, child, 0, 0)
        out["process_vm_readv"] = sc(310, child, 0, 0, 0, 0, 0)
        out["process_vm_writev"] = sc(311, child, 0, 0, 0, 0, 0)
        pidfd = os.pidfd_open(child)
        out["pidfd_getfd"] = sc(438, pidfd, 0, 0)
        os.kill(child, 9)
        os.waitpid(child, 0)
        p = subprocess.run(["strace", "-f", "-o", "/dev/null", "true"], capture_output=True, text=True)
        out["strace"] = [p.returncode, "Operation not permitted" in p.stderr]
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    for k in ("traceme", "attach", "seize", "process_vm_readv", "process_vm_writev", "pidfd_getfd"):
        assert out[k] == "EPERM", (k, out)
    assert out["strace"][0] != 0 and out["strace"][1] is True
    seen = tried(sandbox, r)
    assert seen is None or {"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd"} <= seen, seen
    host.check()


def test_symlink_and_hardlink_escapes_through_fetch(sandbox, host, secrets):
    links = {
        "shadow": "/etc/shadow", "environ": "/proc/1/environ", "readme": "/work/main/README.md",
        "passwd": "/etc/passwd", "root_passwd": "/proc/1/root/etc/passwd", "mem": "/proc/1/mem",
        "zero": "/dev/zero", "fd0": "/proc/self/fd/0",
        **{f"secret{i}": p for i, p in enumerate(secrets["paths"])},
    }
    code = "".join(f"ln -s {t} {n}\n" for n, t in links.items()) + src('''
        for t in /etc/passwd /usr/bin/python3.11 /proc/1/environ; do
            ln "$t" "hard_$(basename $t)" 2>/dev/null && echo "HARDLINKED $t"
        done
        echo linked
    ''')
    names = [*links, "hard_passwd", "hard_python3.11", "hard_environ"]
    r = sandbox.run(code, language="bash", fetch=names)
    assert (r.status, r.stdout) == ("ok", "linked\n"), r
    host_passwd = Path("/etc/passwd").read_bytes()
    for name, data in r.files.items():
        assert secrets["value"].encode() not in data, name
        assert data != host_passwd and b"SECRET_TOKEN" not in data, name
    # what may come back is the sandbox's own view only
    assert set(r.files) <= {"passwd", "root_passwd", "environ", "fd0"}, set(r.files)
    assert r.files.get("fd0", b"") == b""  # the read operation's own (empty) stdin
    for name in ("passwd", "root_passwd"):
        if name in r.files:
            assert r.files[name].splitlines()[0].startswith(b"root:x:0:0:") and b"sandbox:x:1000" in r.files[name]
            assert len(r.files[name].splitlines()) == 3
    if "environ" in r.files:  # the read operation's own (fixed) environment
        names_ = {x.split(b"=")[0].decode() for x in r.files["environ"].split(b"\0") if x}
        assert names_ <= SANDBOX_ENV, names_
    for n in ("shadow", "readme", "mem", "zero", "hard_passwd", "hard_python3.11", "hard_environ"):
        assert n in r.detail
    # and through a session, by read_file
    with sandbox.session("bash") as s:
        assert s.run("ln -s /etc/shadow a; ln -s /work/main/README.md b; ln -s " + secrets["paths"][0] + " c").ok
        for n in "abc":
            with pytest.raises(FileNotFoundError):
                s.read_file(n)
        # a planted symlink does not make the caller's write_file land on the host
        assert s.run("ln -s /etc/passwd evil; ln -s /work/main/hostile-pwned evil2").ok
        for n in ("evil", "evil2"):
            try:
                s.write_file(n, "pwned\n")
            except OSError:
                pass
    host.check()


def test_paths_leaving_the_workspace_are_refused(sandbox, host):
    bad = ["../../etc/x", "/abs", "/etc/passwd", "/workspace/../x", "a/../../x", "..", ".", "", "x\0y",
           "../workspace/x"]
    for p in bad:
        with pytest.raises(SandboxInputError):
            sandbox.run("print(1)", files={p: "data"})
        with pytest.raises(SandboxInputError):
            sandbox.run("print(1)", fetch=[p])
    with sandbox.session("bash") as s:
        for p in bad:
            with pytest.raises(SandboxInputError):
                s.read_file(p)
            with pytest.raises(SandboxInputError):
                s.write_file(p, "data")
        # ... while inside-the-workspace spellings work
        s.write_file("/workspace/d/../ok.txt", "fine")
        assert s.read_file("ok.txt") == b"fine"
    host.check()


def test_sessions_cannot_reach_each_other(sandbox, host, secrets):
    with sandbox.session("bash") as victim, sandbox.session("bash") as attacker:
        victim.write_file("secret.txt", secrets["value"])
        # the worst case: the attacker knows the victim's session id (and its own)
        code = src('''
            read id
            grep -o '/sessions/[0-9a-f]*' /proc/self/mountinfo | sort -u | sed 's/^/mount: /'
            for p in /sessions/$id/ws/secret.txt /proc/1/root/sessions/$id/ws/secret.txt /sessions/$id/snap \\
                     /sessions/$id /sessions/$id/ws; do
                cat "$p" 2>/dev/null && echo "READ $p"
                ls "$p" 2>/dev/null && echo "LISTED $p"
            done
            ln -s /sessions/$id/ws/secret.txt link
            ln -s /sessions/$id/ws dir
            ln -s /sessions root
            ls -A /sessions
            find / -name secret.txt -not -path '/proc/*' 2>/dev/null
            true
        ''')
        r = attacker.run(code, stdin=victim.id + "\n")
        assert r.status == "ok", r
        assert "READ" not in r.stdout and "LISTED" not in r.stdout and "secret.txt" not in r.stdout, r.stdout
        assert secrets["value"] not in r.stdout + r.stderr
        # (the victim's id may show in the attacker's /proc/self/mountinfo, through mount
        # propagation into /sessions under the cover: an id alone opens nothing)
        snap = attacker.snapshot()  # snapshot and restore run outside the run's view: links stay links
        attacker.restore(snap)
        for n in ("link", "dir/secret.txt", f"root/{victim.id}/ws/secret.txt"):
            with pytest.raises(FileNotFoundError):
                attacker.read_file(n)
        r = attacker.run("cat link dir/secret.txt root/*/ws/secret.txt 2>&1; ls -A root; true")
        assert secrets["value"] not in r.stdout and r.stdout.count("No such file") == 3, r.stdout
        assert victim.read_file("secret.txt") == secrets["value"].encode()
        assert victim.run("ls -A").stdout == "secret.txt\n"
    host.check()
