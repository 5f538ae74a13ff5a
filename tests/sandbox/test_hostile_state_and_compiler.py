"""Hostile programs against the sandbox, state left between runs; compile-time bombs.
What every test checks: tests/sandbox/hostile.py."""

from __future__ import annotations

import time
import uuid

import pytest

from hostile import SANDBOX_ENV, src, last_json, PRELUDE


def test_no_state_left_for_the_next_run(sandbox, host):
    key = 0x5EED
    tag = uuid.uuid4().hex[:12]
    a = PRELUDE + src(f'''
        import socket, sys
        out = {{}}
        for p in ("/tmp/x", "/dev/shm/x", "/workspace/x", "/workspace/sitecustomize.py", "/workspace/random.py"):
            open(p, "w").write("print('hijacked')\\n")
        shmget = libc.shmget
        out["shmget"] = shmget({key}, 4096, 0o1000 | 0o666)
        out["msgget"] = libc.msgget({key}, 0o1000 | 0o666)
        out["semget"] = libc.semget({key}, 1, 0o1000 | 0o666)
        s = socket.socket(socket.AF_UNIX)
        s.bind(b"\\0hostile-{tag}")
        s.listen()
        planted = []
        for d in sys.path:
            try:
                open(d + "/hostile_{tag}.py", "w").write("print('hijacked')\\n")
                planted.append(d)
            except OSError:
                pass
        out["planted"] = planted
        out["hostname"] = attempt(lambda: __import__("socket").sethostname("pwned"))
        os.environ["PYTHONSTARTUP"] = "/tmp/x"
        os.chdir("/tmp")
        print(json.dumps(out))
    ''')
    r = sandbox.run(a)
    assert r.status == "ok", r
    out = last_json(r)
    assert out["shmget"] >= 0 and out["msgget"] >= 0 and out["semget"] >= 0  # it could make them...
    assert out["planted"] == ["/workspace"] and out["hostname"] == "EPERM"
    b = PRELUDE + src(f'''
        import importlib.util, socket
        out = {{}}
        for p in ("/tmp/x", "/dev/shm/x", "/workspace/x", "/workspace/sitecustomize.py", "/workspace/random.py"):
            out[p] = os.path.exists(p)
        out["ls"] = sorted(os.listdir("/workspace") + os.listdir("/tmp") + os.listdir("/dev/shm"))
        out["shmget"] = "OK" if libc.shmget({key}, 0, 0) != -1 else errno.errorcode[ctypes.get_errno()]
        out["msgget"] = "OK" if libc.msgget({key}, 0) != -1 else errno.errorcode[ctypes.get_errno()]
        out["semget"] = "OK" if libc.semget({key}, 0, 0) != -1 else errno.errorcode[ctypes.get_errno()]
        u = socket.socket(socket.AF_UNIX)
        out["abstract"] = attempt(lambda: u.connect(b"\\0hostile-{tag}"))
        out["module"] = importlib.util.find_spec("hostile_{tag}") is not None
        import random
        out["random"] = random.__file__
        out["cwd"] = os.getcwd()
        out["env"] = dict(os.environ)
        out["hostname"] = socket.gethostname()
        print(json.dumps(out))
    ''')
    r = sandbox.run(b)
    assert r.status == "ok" and "hijacked" not in r.stdout, r
    out = last_json(r)
    assert not any(out[p] for p in ("/tmp/x", "/dev/shm/x", "/workspace/x", "/workspace/sitecustomize.py",
                                    "/workspace/random.py"))
    assert out["ls"] == []
    assert (out["shmget"], out["msgget"], out["semget"]) == ("ENOENT", "ENOENT", "ENOENT")
    assert out["abstract"] == "ECONNREFUSED" and out["module"] is False
    assert out["random"].startswith("/usr/lib/python3") and out["cwd"] == "/workspace"
    assert set(out["env"]) == SANDBOX_ENV and out["hostname"] == "sandbox"
    r = sandbox.run("ipcmk -M 1024 >/dev/null; ipcmk -Q >/dev/null; ipcs -m -q | grep -c sandbox", language="bash")
    assert r.stdout == "2\n"
    r = sandbox.run("ipcs -m -q -s | grep -c sandbox; true", language="bash")
    assert r.stdout == "0\n"
    host.check()


# -- the compiler


# Many evaluations, each well under g++'s per-evaluation ops limit (-fconstexpr-ops-limit,
# 2**25, and a loop's -fconstexpr-loop-limit, 2**18): one long loop hits that limit and fails to compile in about 2 s on a fast machine,
# which is a compile error, not the runaway compile these cases need. gcc caches a call by its
# argument, so every constant calls f with its own.
CONSTEXPR_SPIN = src('''
    constexpr unsigned long long f(unsigned long long k) {
        unsigned long long s = k;
        for (unsigned long long i = 0; i < 1000; ++i)
            for (unsigned long long j = 0; j < 1000; ++j)
                s += i ^ j ^ k;
        return s;
    }
''') + "".join(f"constexpr unsigned long long v{k} = f({k});\n" for k in range(2000)) + (
    "int main() { return (int)(v0 & v1999 & 1); }\n")

COMPILE_BOMBS = {
    # (language, code, limits changes, status, detail)
    "include_dev_zero": ("c", '#include "/dev/zero"\nint main(void){return 0;}\n', {}, "memory", None),
    "include_dev_urandom": ("c", '#include "/dev/urandom"\nint main(void){return 0;}\n', {}, "memory", None),
    "huge_static_array": ("c", "char a[1 << 30] = {1};\nint main(void){return a[5];}\n", {}, "error",
                          "compile failed"),
    "template_recursion": ("cpp", "template<int N> struct F { enum { v = F<N-1>::v + 1 }; };\n"
                                  "int main(){ return F<100000>::v; }\n", {}, "error", "compile failed"),
    "constexpr_wall": ("cpp", CONSTEXPR_SPIN, {"compile_wall_s": 3, "compile_cpu_s": 30}, "timeout",
                       "compile timeout"),
    # a compiler killed for CPU time is a compile timeout, like one killed for wall time
    "constexpr_cpu": ("cpp", CONSTEXPR_SPIN, {"compile_wall_s": 30, "compile_cpu_s": 2}, "timeout",
                      "compile timeout"),
    # no compile limits of its own: the compile step spends the run's wall_s
    "constexpr_run_wall": ("cpp", CONSTEXPR_SPIN, {"compile_wall_s": None, "compile_cpu_s": None, "wall_s": 3,
                                                   "cpu_s": 30}, "timeout", "compile timeout"),
}


@pytest.mark.parametrize("kind", COMPILE_BOMBS)
def test_compile_time_bombs(sandbox, host, kind):
    language, code, changes, status, detail = COMPILE_BOMBS[kind]
    lim = sandbox.limits.with_(**{"compile_wall_s": 5, "compile_cpu_s": 5, **changes})
    t = time.monotonic()
    r = sandbox.run(code, language=language, limits=lim)
    elapsed = time.monotonic() - t
    assert r.stdout == ""  # nothing ever ran
    assert r.status == status, r
    if detail:
        assert r.detail == detail, r
    assert elapsed < min(lim.compile_wall(), lim.compile_cpu()) + 20  # a wide margin for the harness only
    host.check()
