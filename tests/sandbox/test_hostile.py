"""Hostile programs against the sandbox: one test per property. Each test checks
(a) the attack failed, from the evidence the program itself printed, (b) the exact status,
(c) the host is unchanged and nothing of the run is left (`host.check()`), and (d) the
sandbox still runs `print(1)` afterwards (also in `host.check()`).

Regressions of bugs this suite found are at the end; each raises Bug with the evidence.
"""

from __future__ import annotations

import hashlib
import json
import os
import select
import signal
import socket
import subprocess
import textwrap
import threading
import time
import uuid
from pathlib import Path

import pytest

from tempering.errors import SandboxInputError
from tempering.sandbox import Sandbox

NOBODY = 65534
SANDBOX_ENV = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "PYTHONPATH",
               "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
               "PYTHONIOENCODING"}
REFUSED = {"EROFS", "EACCES", "ENOENT", "EPERM"}


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def last_json(r) -> dict:
    lines = r.stdout.strip().splitlines()
    assert lines, f"the program printed nothing: {r}"
    return json.loads(lines[-1])


def tried(sandbox, r, kind: str = "denied_syscall") -> set[str] | None:
    """The audit log's details of `kind` for run `r` (what the fork server's seccomp listener
    saw), or None on a kernel without a listener that can let calls continue (< 5.5)."""
    if not sandbox.features.get("seccomp_audit"):
        return None
    return {a["detail"] for a in r.audit if a["kind"] == kind}


def secret_hex(secrets) -> str:
    return secrets["value"].removeprefix("HOSTILE-SECRET-")


# Python prologue shared by the probes: errno names and a raw syscall helper.
PRELUDE = src(r'''
    import ctypes, errno, json, os, sys
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    def ename(e):
        if type(e).__name__ in ("gaierror", "herror", "TimeoutError", "timeout"):
            return type(e).__name__
        return errno.errorcode.get(e.errno, str(e.errno)) if getattr(e, "errno", None) else type(e).__name__
    def sc(nr, *args):
        ctypes.set_errno(0)
        r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
        if r == -1:
            return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
        if r == 0 and nr == 56:  # a raw clone that worked: this is the child
            os._exit(0)
        return "OK"
    def attempt(fn):
        try:
            fn()
            return "OK"
        except Exception as e:
            return ename(e)
''')

# Scans this process's whole memory (a python run is a fork of the fork server) for
# secret-shaped strings; prints the hex parts found. The pattern is only ever in memory
# followed by "(", so it never matches itself.
MEMSCAN = src(r'''
    import os, re
    def memscan():
        pat = re.compile(rb"HOSTILE-SECRET-([0-9a-f]{32})")
        found = set()
        fd = os.open("/proc/self/mem", os.O_RDONLY)
        for line in open("/proc/self/maps").read().splitlines():
            parts = line.split()
            if parts[1][0] != "r" or line.endswith(("[vvar]", "[vsyscall]")):
                continue
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            pos = lo
            while pos < hi:
                n = min(hi - pos, 1 << 22)
                try:
                    chunk = os.pread(fd, n + 64, pos) if pos + n < hi else os.pread(fd, n, pos)
                except OSError:
                    break
                found.update(m.group(1).decode() for m in pat.finditer(chunk))
                pos += n
        os.close(fd)
        return sorted(found)
''')


def host_pid_holding(box: Sandbox, path: str, timeout: float = 60.0) -> int:
    """Host pid of the run process that holds `path` (as it sees it) open."""
    server = box._proc.pid
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                if Path(f"/proc/{d}/status").read_text().split("PPid:")[1].split()[0] != str(server):
                    continue
                for fd in os.listdir(f"/proc/{d}/fd"):
                    if os.readlink(f"/proc/{d}/fd/{fd}") == path:
                        return int(d)
            except (OSError, IndexError):
                continue
        time.sleep(0.02)
    raise AssertionError(f"no run process holds {path}")


def in_thread(fn):
    box = {}
    t = threading.Thread(target=lambda: box.update(r=fn()))
    t.start()
    return t, box


def test_host_check_catches_leftovers(sandbox, host, plant):
    """The harness itself: a stray uid-65534 process and a planted file are noticed."""
    stray = plant(["sleep", "600"])  # outlives the guard's re-reads
    planted = Path("/tmp/hostile-pwned")
    try:
        with pytest.raises(AssertionError, match="uid 65534 processes outside"):
            host.check()
        planted.write_text("x")
        with pytest.raises(AssertionError, match="hostile files appeared"):
            host.check()
    finally:
        planted.unlink(missing_ok=True)
        stray.kill()
        stray.wait()
    host.check()


# -- runaway resources


def test_python_fork_bomb(sandbox, host, tight):
    code = src('''
        import errno, json, os, signal, time
        kids, err = [], None
        for _ in range(200):
            try:
                pid = os.fork()
            except OSError as e:
                err = errno.errorcode[e.errno]
                break
            if pid == 0:
                time.sleep(60)
                os._exit(0)
            kids.append(pid)
        print(json.dumps({"forked": len(kids), "error": err}), flush=True)
        for k in kids:
            os.kill(k, signal.SIGKILL)
            os.waitpid(k, 0)
        while True:  # now every process forks, forever
            try:
                os.fork()
            except OSError:
                pass
    ''')
    lim = tight(sandbox.limits)
    r = sandbox.run(code, limits=lim)
    out = last_json(r)
    assert out["error"] == "EAGAIN" and out["forked"] == sandbox.limits.processes - 1
    assert (r.status, r.exit_code) == ("timeout", -9)
    assert r.detail in (f"wall time passed {lim.wall_s} s", f"cpu time passed {lim.cpu_s} s"), r.detail
    host.check()


def test_bash_fork_bomb(sandbox, host, tight):
    # The classic: pid 1 returns at once and its exit takes the whole bomb with it.
    r = sandbox.run(":(){ :|:& };:", language="bash")
    assert (r.status, r.exit_code) == ("ok", 0)
    # A bomb that lasts: it hits the process limit, then the wall clock.
    lim = tight(sandbox.limits, cpu=False)
    r = sandbox.run(":(){ :|:& };:\nsleep 30", language="bash", limits=lim)
    assert "fork: retry: Resource temporarily unavailable" in r.stderr
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"wall time passed {lim.wall_s} s")
    host.check()


MEMORY_BOMBS = {
    "bytearray": ("python", "b = bytearray(1 << 30)\nprint('allocated 1 GiB', flush=True)"),
    "mmap_touch": ("python", src('''
        import mmap
        m = mmap.mmap(-1, 1 << 30)
        for i in range(0, 1 << 30, 4096):
            m[i] = 1
            if i % (32 << 20) == 0:
                print(i >> 20, flush=True)
        print('touched 1 GiB', flush=True)
    ''')),
    "c_malloc": ("c", src(r'''
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        int main(void) {
            for (size_t mb = 0;; mb++) {
                char *p = malloc(1 << 20);
                if (!p) { printf("malloc failed at %zu\n", mb); return 3; }
                memset(p, 1, 1 << 20);
                if (mb % 32 == 0) { printf("%zu\n", mb); fflush(stdout); }
            }
        }
    ''')),
}


@pytest.mark.parametrize("kind", MEMORY_BOMBS)
def test_memory_bombs(sandbox, host, kind):
    language, code = MEMORY_BOMBS[kind]
    r = sandbox.run(code, language=language)
    limit = sandbox.limits.memory_mb
    assert "allocated" not in r.stdout and "touched" not in r.stdout and "malloc failed" not in r.stdout
    progress = [int(x) for x in r.stdout.split()]
    assert all(mb < limit for mb in progress), progress
    assert (r.status, r.exit_code) == ("memory", -9), r
    assert r.peak_memory_mb <= limit * 1.01
    host.check()


def test_infinite_loop(sandbox, host, tight):
    lim = tight(sandbox.limits, wall=False)
    r = sandbox.run("while True:\n    pass", limits=lim)
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"cpu time passed {lim.cpu_s} s")
    assert lim.cpu_s <= r.cpu_s < lim.cpu_s + 0.5
    host.check()


def test_sigterm_ignoring_loop(sandbox, host, tight):
    code = src('''
        import signal
        for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGXCPU, signal.SIGUSR1, signal.SIGALRM):
            signal.signal(s, signal.SIG_IGN)
        print("ignoring", flush=True)
        while True:
            pass
    ''')
    lim = tight(sandbox.limits, wall=False)
    r = sandbox.run(code, limits=lim)
    assert r.stdout == "ignoring\n"
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"cpu time passed {lim.cpu_s} s")
    host.check()


CPU_THREADS = {
    "python_threads": ("python", src('''
        import threading
        go = threading.Event()
        def spin():
            go.wait()  # all start before any spins: 16 spinners fighting for the GIL slow each start
            while True:
                pass
        for _ in range(16):
            threading.Thread(target=spin).start()
        print("16 threads", flush=True)
        go.set()
        spin()
    ''')),
    "c_pthreads": ("c", src(r'''
        #include <pthread.h>
        #include <stdio.h>
        #include <string.h>
        static void *spin(void *a) { volatile unsigned long x = 0; for (;;) x++; return a; }
        int main(void) {
            pthread_t t; int n = 0, err = 0;
            for (int i = 0; i < 100; i++) { if ((err = pthread_create(&t, 0, spin, 0))) break; n++; }
            printf("%d %s\n", n, err ? strerror(err) : "none");
            fflush(stdout);
            spin(0);
        }
    ''')),
}


@pytest.mark.parametrize("kind", CPU_THREADS)
def test_cpu_threads(sandbox, host, kind, tight):
    language, code = CPU_THREADS[kind]
    lim = tight(sandbox.limits, wall=False)
    r = sandbox.run(code, language=language, limits=lim)
    if kind == "c_pthreads":
        # every thread counts against the process limit
        assert r.stdout == f"{lim.processes - 1} Resource temporarily unavailable\n"
    else:
        assert r.stdout == "16 threads\n"
    # all the threads' CPU counts against cpu_s
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"cpu time passed {lim.cpu_s} s")
    assert r.cpu_s < lim.cpu_s + 0.5
    host.check()


def test_long_sleep(sandbox, host, tight):
    lim = tight(sandbox.limits, cpu=False)
    r = sandbox.run("import time\nprint('sleeping', flush=True)\ntime.sleep(3600)", limits=lim)
    assert r.stdout == "sleeping\n"
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"wall time passed {lim.wall_s} s")
    assert lim.wall_s <= r.wall_s and r.cpu_s < 0.5
    r = sandbox.run("sleep infinity", language="bash", limits=lim)
    assert (r.status, r.exit_code, r.detail) == ("timeout", -9, f"wall time passed {lim.wall_s} s")
    host.check()


def test_disk_and_inode_exhaustion(sandbox, host):
    code = src('''
        import errno, json, os
        res = {}
        for d in ("/workspace", "/tmp", "/dev/shm"):
            mb = 0
            try:
                with open(f"{d}/fill", "wb") as f:
                    while mb < 200:
                        f.write(b"x" * (1 << 20))
                        f.flush()
                        mb += 1
                res[d] = ["no error", mb]
            except OSError as e:
                res[d] = [errno.errorcode[e.errno], mb]
            os.remove(f"{d}/fill")
            n = 0
            try:
                while n < 50000:
                    open(f"{d}/i{n}", "w").close()
                    n += 1
                res[d + " inodes"] = ["no error", n]
            except OSError as e:
                res[d + " inodes"] = [errno.errorcode[e.errno], n]
            for i in range(n):
                os.remove(f"{d}/i{i}")
        print(json.dumps(res))
    ''')
    lim = sandbox.limits
    r = sandbox.run(code, limits=lim)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    for d in ("/workspace", "/tmp", "/dev/shm"):
        err, mb = out[d]
        assert err in ("ENOSPC", "EFBIG") and mb <= lim.disk_mb, (d, out[d])
        err, n = out[d + " inodes"]
        assert err == "ENOSPC" and n < 20000, (d, out[d + " inodes"])
    host.check()


# -- output


def test_output_floods(sandbox, host):
    cap = 65536
    lim = sandbox.limits.with_(output_bytes=cap)
    r = sandbox.run("yes", language="bash", limits=lim)
    assert (r.status, r.exit_code, r.truncated) == ("output_limit", -9, True)
    assert r.stdout_bytes == b"y\n" * (cap // 2) and r.stdout == "y\n" * (cap // 2)
    r = sandbox.run("yes err >&2", language="bash", limits=lim)
    assert (r.status, r.truncated) == ("output_limit", True)
    assert r.stderr == "err\n" * (cap // 4) and r.stdout_bytes == b""
    r = sandbox.run("import os\nwhile True:\n    os.write(1, b'\\xff' * 4096)", limits=lim)
    assert (r.status, r.truncated) == ("output_limit", True) and r.stdout_bytes == b"\xff" * cap
    host.check()


def test_invalid_utf8_on_stderr(sandbox, host):
    raw = b"\xff\xfe bad \xc3\x28 \xed\xa0\x80 end\n"
    r = sandbox.run(f"import os, sys\nos.write(2, {raw!r})\nos.write(1, {raw!r})\nsys.exit(3)")
    assert (r.status, r.exit_code) == ("error", 3)
    assert r.stderr == raw.decode("utf-8", "replace") and "\ufffd" in r.stderr
    assert r.stdout_bytes == raw and r.stdout == raw.decode("utf-8", "replace")
    r = sandbox.run(r"printf '\377\376\000x\n' >&2", language="bash")
    assert (r.status, r.stderr) == ("ok", b"\xff\xfe\x00x\n".decode("utf-8", "replace"))
    host.check()


def test_stdout_and_stderr_captured_exactly(sandbox, host):
    gen = "b''.join(hashlib.sha256(i.to_bytes(4, 'big')).digest() for i in range(25000))"  # 800 kB
    expected = b"".join(hashlib.sha256(i.to_bytes(4, "big")).digest() for i in range(25000))
    code = src(f'''
        import hashlib, os, sys
        data = {gen}
        sys.stdout.buffer.write(data[:1000])
        sys.stdout.flush()
        os.write(1, data[1000:])
        sys.stderr.write("text é\\n")
        sys.stderr.flush()
        os.write(2, bytes(range(256)))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.truncated) == ("ok", False)
    assert r.stdout_bytes == expected and r.stdout == expected.decode("utf-8", "replace")
    assert r.stderr == "text é\n" + bytes(range(256)).decode("utf-8", "replace")
    c = '#include <stdio.h>\nint main(void){ fwrite("a\\0b\\xff\\n", 1, 5, stdout); fputs("e\\0", stderr); return 0; }'
    r = sandbox.run(c, language="c")
    assert (r.status, r.stdout_bytes, r.stderr) == ("ok", b"a\x00b\xff\n", "e")
    host.check()


@pytest.mark.parametrize("language", ["python", "bash"])
def test_child_holding_stdout_does_not_delay_the_result(sandbox, host, language):
    code = {
        "python": "import os, time\nif os.fork() == 0:\n    time.sleep(3600)\n    os._exit(0)\nprint('parent done')",
        "bash": "sleep 3600 &\n(sleep 3600; echo late) &\necho parent done",
    }[language]
    r = sandbox.run(code, language=language)
    # had the result waited for the child that holds stdout, the wall limit would have ended
    # the run as a timeout: "ok" is the proof, whatever the machine's speed
    assert (r.status, r.exit_code, r.stdout, r.detail) == ("ok", 0, "parent done\n", "")
    host.check()


# -- processes that try to outlive the run


@pytest.mark.parametrize("language", ["python", "bash"])
def test_double_forked_daemon_dies_with_the_run(sandbox, host, language):
    code = {
        "python": src('''
            import os, time
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    for fd in (0, 1, 2):
                        os.close(fd)
                    while True:
                        with open("/workspace/hb", "a") as f:
                            f.write("%f\\n" % time.monotonic())
                        time.sleep(0.02)
                os._exit(0)
            while not os.path.exists("/workspace/hb") or len(open("/workspace/hb").read().split()) < 5:
                time.sleep(0.02)
            print("daemon running", os.path.getsize("/workspace/hb") > 0)
        '''),
        "bash": src('''
            ( setsid bash -c 'exec 0<&- 1>&- 2>&-; trap "" HUP TERM INT
                              while :; do date +%s%N >> /workspace/hb; sleep 0.02; done' & )
            until [ -s /workspace/hb ] && [ "$(wc -l < /workspace/hb)" -ge 5 ]; do sleep 0.02; done
            echo daemon running True
        '''),
    }[language]
    with sandbox.session(language) as s:
        r = s.run(code)
        assert (r.status, r.stdout) == ("ok", "daemon running True\n"), r
        time.sleep(0.3)
        first = s.read_file("hb")
        time.sleep(0.6)
        assert s.read_file("hb") == first, "a process of a finished run is still writing to the workspace"
        assert len(first.split()) >= 5
    host.check()


def test_zombies(sandbox, host):
    code = src('''
        import os, time
        def states():
            return [open(f"/proc/{p}/stat").read().rsplit(")", 1)[1].split()[0]
                    for p in os.listdir("/proc") if p.isdigit() and p != "1"]
        for _ in range(20):
            if os.fork() == 0:
                os._exit(0)
        while states().count("Z") < 20:  # each child is a zombie once it has exited
            time.sleep(0.02)
        print(states().count("Z"), len(states()))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code, r.stdout) == ("ok", 0, "20 20\n")
    host.check()


# -- network


def test_network_egress_fails(sandbox, host):
    tag = uuid.uuid4().hex[:12]
    tcp = socket.socket()
    tcp.bind(("0.0.0.0", 0))
    tcp.listen()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("0.0.0.0", 0))
    abstract = socket.socket(socket.AF_UNIX)
    abstract.bind(f"\0tempering-hostile-{tag}".encode())
    abstract.listen()
    try:
        port, uport = tcp.getsockname()[1], udp.getsockname()[1]
        try:
            host_ips = subprocess.run(["hostname", "-I"], capture_output=True, text=True).stdout.split()
        except OSError:
            host_ips = []
        cfg = {
            "tcp": [["127.0.0.1", port], ["::1", port], *[[ip, port] for ip in host_ips],
                    ["1.1.1.1", 53], ["8.8.8.8", 53], ["169.254.169.254", 80], ["2606:4700:4700::1111", 53]],
            "udp": [["127.0.0.1", uport], *[[ip, uport] for ip in host_ips], ["8.8.8.8", 53]],
            "abstract": f"\0tempering-hostile-{tag}",
        }
        code = PRELUDE + src(r'''
            import fcntl, socket, struct
            cfg = json.loads(sys.stdin.read())
            out = {}
            for h, p in cfg["tcp"]:
                s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET)
                s.settimeout(1)
                out[f"tcp {h}"] = attempt(lambda: s.connect((h, p)))
            for h, p in cfg["udp"]:
                s = socket.socket(socket.AF_INET6 if ":" in h else socket.AF_INET, socket.SOCK_DGRAM)
                out[f"udp {h}"] = attempt(lambda: s.sendto(b"x", (h, p)))
            out["dns"] = attempt(lambda: socket.getaddrinfo("example.com", 80))
            for name, args in [("packet", (socket.AF_PACKET, socket.SOCK_RAW, 0)),
                               ("raw4", (socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)),
                               ("raw6", (socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))]:
                out[name] = attempt(lambda: socket.socket(*args))
            u = socket.socket(socket.AF_UNIX)
            out["abstract"] = attempt(lambda: u.connect(cfg["abstract"].encode()))
            out["interfaces"] = [n for _, n in socket.if_nameindex()]
            s = socket.socket()
            flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
            out["lo_up"] = bool(flags & 1)
            out["lo_set_up"] = attempt(lambda: fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1)))
            print(json.dumps(out))
        ''')
        r = sandbox.run(code, stdin=json.dumps(cfg))
        assert (r.status, r.exit_code) == ("ok", 0), r
        out = last_json(r)
        for h, _ in cfg["tcp"]:
            assert out[f"tcp {h}"] in ("ENETUNREACH", "EADDRNOTAVAIL", "EHOSTUNREACH"), (h, out)
        assert out["tcp 127.0.0.1"] == "ENETUNREACH"
        for h, _ in cfg["udp"]:
            assert out[f"udp {h}"] in ("ENETUNREACH", "EADDRNOTAVAIL", "EHOSTUNREACH"), (h, out)
        assert out["dns"] == "gaierror"
        assert (out["packet"], out["raw4"], out["raw6"]) == ("EPERM", "EPERM", "EPERM")
        assert out["abstract"] == "ECONNREFUSED"
        assert out["interfaces"] == ["lo"] and out["lo_up"] is False and out["lo_set_up"] == "EPERM"
        denied, network = tried(sandbox, r), tried(sandbox, r, "network")
        if denied is not None:  # the raw sockets and every connect beyond loopback are in the audit log
            assert {"socket(AF_PACKET)"} <= denied, denied
            outside = {f"connect to {h}:{p}" if ":" not in h else f"connect to [{h}]:{p}"
                       for h, p in cfg["tcp"] if h not in ("127.0.0.1", "::1")}
            assert outside <= network, (outside, network)
            assert not any("127.0.0.1" in d or "[::1]" in d for d in network), network
        # and nothing reached the host's sockets
        assert select.select([tcp, udp, abstract], [], [], 0.2)[0] == []
    finally:
        for s in (tcp, udp, abstract):
            s.close()
    host.check()


# -- host secrets and the caller's memory


def test_host_secrets_invisible(sandbox, host, secrets, make_sandbox, monkeypatch):
    monkeypatch.setenv("SECRET_TOKEN", secrets["value"])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secrets["value"])
    fresh = make_sandbox()  # started with the secrets in the caller's environment
    server_env = Path(f"/proc/{fresh._proc.pid}/environ").read_bytes()
    assert b"SECRET_TOKEN" not in server_env and secrets["value"].encode() not in server_env
    code = PRELUDE + MEMSCAN + src(r'''
        import glob, re
        cfg = json.loads(sys.stdin.read())
        pat = re.compile(rb"HOSTILE-SECRET-([0-9a-f]{32})")
        found, env_names, opened, dirs = {}, {}, {}, {}
        def scan(label, data):
            for m in pat.finditer(data):
                found.setdefault(m.group(1).decode(), []).append(label)
        control = "HOSTILE-SECRET-" + "c0" * 16  # positive control: every scan below must find it
        open("/workspace/control", "w").write(control)
        scan("os.environ", repr(dict(os.environ)).encode())
        for p in sorted(set(glob.glob("/proc/*/environ") + glob.glob("/proc/*/cmdline") +
                            ["/proc/self/environ", "/proc/1/environ", "/proc/cmdline", "/proc/self/mountinfo"])):
            try:
                data = open(p, "rb").read()
            except OSError:
                continue
            scan(p, data)
            if p.endswith("environ"):
                env_names[p] = sorted(x.split(b"=")[0].decode() for x in data.split(b"\0") if x)
        for p in cfg["paths"]:
            for q in (p, "/proc/1/root" + p, "/proc/self/root" + p):
                try:
                    scan(q, open(q, "rb").read())
                    opened[q] = "READ"
                except OSError as e:
                    opened[q] = ename(e)
        for d in ("/home", "/root", "/work", "/work/main", "/usr/local", "/sys", "/var", "/mnt", "/srv",
                  "/proc/1/root/root", "/proc/1/root/work"):
            dirs[d] = os.path.exists(d)
        dirs["/opt holds more than the sandbox library"] = os.path.exists("/opt") and os.listdir("/opt") != ["pylib"]
        for top, subdirs, files in os.walk("/"):
            if top in ("/usr", "/proc", "/sys") or top.startswith(("/usr/", "/proc/")):
                subdirs[:] = []
                continue
            subdirs[:] = [s for s in subdirs if not (top == "/" and s in ("usr", "proc"))]
            for f in files:
                p = os.path.join(top, f)
                try:
                    if os.path.isfile(p) and not os.path.islink(p):
                        scan(p, open(p, "rb").read(1 << 20))
                except OSError:
                    pass
        for h in memscan():
            found.setdefault(h, []).append("memory")
        print(json.dumps({"found": found, "env": env_names, "opened": opened, "dirs": dirs, "control": control}))
    ''')
    r = fresh.run(code, stdin=json.dumps({"paths": secrets["paths"]}),
                  limits=fresh.limits)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert set(out["found"]["c0" * 16]) >= {"/workspace/control", "memory"}  # the scans work
    assert secret_hex(secrets) not in out["found"], out["found"]
    assert secrets["value"] not in r.stdout + r.stderr
    assert out["env"], "no environ was readable"
    for p, names in out["env"].items():
        assert "SECRET_TOKEN" not in names and "AWS_SECRET_ACCESS_KEY" not in names, (p, names)
        assert set(names) <= SANDBOX_ENV | {"LANG", "LC_ALL", "PATH", "PYTHONIOENCODING"}, (p, names)
    assert out["opened"] and set(out["opened"].values()) == {"ENOENT"}, out["opened"]
    assert not any(out["dirs"].values()), out["dirs"]
    host.check()


def test_earlier_and_concurrent_runs_data_not_in_a_runs_memory(sandbox, host):
    secret = uuid.uuid4().hex
    value = f"HOSTILE-SECRET-{secret}"
    holder = (f"# {value}\nimport sys, time\ndata = sys.stdin.read() + open('f.txt').read()\n"
              f"keep = [data * 1000]\nprint(len(keep[0]))\ntime.sleep(SLEEP)\n")
    for _ in range(3):  # cycle the pool: every slot served a run that held the secret
        r = sandbox.run(holder.replace("SLEEP", "0"), stdin=value, files={"f.txt": value})
        assert r.status == "ok"
    t, box = in_thread(lambda: sandbox.run(holder.replace("SLEEP", "1.5"), stdin=value, files={"f.txt": value}))
    time.sleep(0.4)
    scan = MEMSCAN + "import json\ncontrol = 'HOSTILE-SECRET-' + 'c1' * 16\nprint(json.dumps(memscan()))\n"
    r = sandbox.run(scan, limits=sandbox.limits)
    t.join()
    assert box["r"].status == "ok"
    assert (r.status, r.exit_code) == ("ok", 0), r
    assert "c1" * 16 in last_json(r)  # the scan finds what is in memory
    assert secret not in last_json(r)
    with sandbox.session("python") as s:  # and a session's read operation neither
        s.write_file("x.txt", "x")
        assert s.read_file("x.txt") == b"x"
        r = s.run(scan, limits=sandbox.limits)
        assert r.status == "ok" and "c1" * 16 in last_json(r) and secret not in last_json(r)
    host.check()


# -- the file system


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


# -- privileges


def test_setuid_cannot_gain_root(sandbox, host):
    code = src('''
        id -u
        python3 - <<'EOF'
        import errno, os
        for name, fn in [("setuid", lambda: os.setuid(0)), ("setgid", lambda: os.setgid(0)),
                         ("setresuid", lambda: os.setresuid(0, 0, 0)), ("setgroups", lambda: os.setgroups([0])),
                         ("seteuid", lambda: os.seteuid(0))]:
            try:
                fn()
                print(name, "OK")
            except OSError as e:
                print(name, errno.errorcode[e.errno])
        EOF
        su -c 'id -u > /workspace/su_ran' root </dev/null; echo "su rc=$?"
        chsh -s /bin/sh root </dev/null; echo "chsh rc=$?"
        gpasswd -a sandbox root </dev/null; echo "gpasswd rc=$?"
        umount /proc; echo "umount rc=$?"
        echo | passwd root; echo "passwd rc=$?"
        mount -t tmpfs none /tmp 2>/dev/null; echo "mount rc=$?"
        [ -e /workspace/su_ran ] && echo "SU RAN: $(cat /workspace/su_ran)"
        grep -E '^(Uid|Gid|CapInh|CapPrm|CapEff|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
        id -u
    ''')
    r = sandbox.run(code, language="bash")  # su fails after 1 s
    assert r.status == "ok", r
    lines = r.stdout.splitlines()
    assert lines[0] == "1000" and lines[-1] == "1000"
    for name in ("setuid", "setgid", "setresuid", "seteuid"):  # uid 0 is not even mapped
        assert f"{name} EINVAL" in lines or f"{name} EPERM" in lines, (name, r.stdout)
    assert "setgroups EPERM" in lines
    for cmd in ("su", "chsh", "gpasswd", "umount", "passwd", "mount"):
        rc = next(int(x.split("rc=")[1]) for x in lines if x.startswith(cmd + " rc="))
        assert rc != 0, (cmd, r.stdout)
    assert "SU RAN" not in r.stdout and "0" not in lines
    status = dict(x.split(":", 1) for x in lines if ":" in x and not x.startswith("su"))
    assert status["Uid"].split() == ["1000"] * 4 and status["Gid"].split() == ["1000"] * 4
    for cap in ("CapInh", "CapPrm", "CapEff", "CapAmb"):
        assert int(status[cap], 16) == 0, (cap, status)
    assert status["NoNewPrivs"].strip() == "1" and status["Seccomp"].strip() == "2"
    host.check()


def test_unshare_and_mount_fail(sandbox, host):
    code = PRELUDE + src(r'''
        import subprocess
        out = {}
        for flags in ("-r", "-U", "-m", "-n", "-p -f", "-i", "-u", "-C", "-T", "-Urm"):
            p = subprocess.run(["unshare", *flags.split(), "true"], capture_output=True, text=True)
            out["unshare " + flags] = [p.returncode, "Operation not permitted" in p.stderr]
        before = open("/proc/self/mountinfo").read()
        m = libc.mount
        m.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
        for name, args in [("tmpfs on /tmp", (b"none", b"/tmp", b"tmpfs", 0, None)),
                           ("proc on /workspace", (b"proc", b"/workspace", b"proc", 0, None)),
                           ("bind / on /workspace", (b"/", b"/workspace", None, 0x1000, None)),
                           ("remount / rw", (b"none", b"/", None, 0x20, None))]:
            out["mount " + name] = "OK" if m(*args) == 0 else errno.errorcode[ctypes.get_errno()]
        for target in (b"/proc", b"/sessions", b"/workspace", b"/usr/bin"):
            ok = libc.umount2(target, 2) == 0
            out["umount " + target.decode()] = "OK" if ok else errno.errorcode[ctypes.get_errno()]
        out["chroot"] = attempt(lambda: os.chroot("/tmp"))
        out["mounts unchanged"] = open("/proc/self/mountinfo").read() == before
        out["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    for k, v in out.items():
        if k.startswith("unshare"):
            assert v == [1, True], (k, v)
        elif k.startswith(("mount ", "umount", "chroot")):
            assert v == "EPERM", (k, v)
    assert out["mounts unchanged"] is True and out["pids"] == [1]
    seen = tried(sandbox, r)
    assert seen is None or {"unshare", "chroot", "mount", "umount2"} <= seen, seen
    host.check()


FORBIDDEN = {  # name: (x86_64 number, args); each must fail with EPERM whatever the args
    "ptrace": (101, [0]), "process_vm_readv": (310, [1]), "process_vm_writev": (311, [1]),
    "pidfd_getfd": (438, [0, 0, 0]), "bpf": (321, [0, 0, 0]), "perf_event_open": (298, [0, 0, -1, -1, 0]),
    "userfaultfd": (323, [0]), "io_uring_setup": (425, [1, 0]), "io_uring_enter": (426, [0]),
    "io_uring_register": (427, [0]), "keyctl": (250, [0]), "add_key": (248, [0]), "request_key": (249, [0]),
    "init_module": (175, [0, 0, 0]), "finit_module": (313, [-1, 0, 0]), "delete_module": (176, [0, 0]),
    "kexec_load": (246, [0]), "kexec_file_load": (320, [-1]), "mount": (165, [0, 0, 0, 0, 0]),
    "umount2": (166, [0, 0]), "pivot_root": (155, [0, 0]), "open_tree": (428, [-1, 0, 0]),
    "move_mount": (429, [-1, 0, -1, 0, 0]), "fsopen": (430, [0, 0]), "fsconfig": (431, [-1, 0]),
    "fsmount": (432, [-1, 0, 0]), "fspick": (433, [-1, 0, 0]), "mount_setattr": (442, [-1, 0, 0, 0, 0]),
    "chroot": (161, [0]), "unshare": (272, [0x10000000]), "unshare_net": (272, [0x40000000]),
    "setns": (308, [0, 0]), "reboot": (169, [0, 0, 0, 0]), "swapon": (167, [0, 0]), "swapoff": (168, [0]),
    "acct": (163, [0]), "settimeofday": (164, [0, 0]), "clock_settime": (227, [0, 0]), "adjtimex": (159, [0]),
    "clock_adjtime": (305, [0, 0]), "sethostname": (170, [0, 0]), "setdomainname": (171, [0, 0]),
    "syslog": (103, [3, 0, 0]), "vhangup": (153, []), "quotactl": (179, [0]), "open_by_handle_at": (304, [0]),
    "name_to_handle_at": (303, [0]), "iopl": (172, [3]), "ioperm": (173, [0, 1, 1]),
    "migrate_pages": (256, [0]), "move_pages": (279, [0]), "uselib": (134, [0]),
    "clone_newuser": (56, [0x10000000 | 17, 0, 0, 0, 0]), "clone_newns": (56, [0x00020000 | 17, 0, 0, 0, 0]),
    "clone_newpid": (56, [0x20000000 | 17, 0, 0, 0, 0]), "clone_newnet": (56, [0x40000000 | 17, 0, 0, 0, 0]),
}


def test_forbidden_syscalls_return_eperm(sandbox, host):
    calls = {k: v for k, v in FORBIDDEN.items()}
    code = PRELUDE + src(f'''
        calls = {calls!r}
        out = {{name: sc(nr, *args) for name, (nr, args) in calls.items()}}
        out["clone3"] = sc(435, 0, 0)
        out["getpid (control)"] = sc(39)
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    wrong = {k: v for k, v in out.items() if k in FORBIDDEN and v != "EPERM"}
    assert wrong == {}, f"not refused with EPERM: {wrong}"
    assert out["clone3"] == "ENOSYS" and out["getpid (control)"] == "OK"
    seen = tried(sandbox, r)
    if seen is not None:  # every refused call is in the audit log, named; clone3 and getpid are not
        want = {"clone(namespace flags)" if n.startswith("clone_") else n for n in FORBIDDEN} - {"unshare_net"}
        assert want == seen, f"refused but not in the audit log: {sorted(want - seen)}; extra: {sorted(seen - want)}"
    host.check()


@pytest.mark.parametrize("abi", ["i386", "x32"])
def test_foreign_syscall_abis_kill_the_program(sandbox, host, abi):
    insn = {
        "i386": '__asm__ volatile("int $0x80" : "=a"(r) : "a"(20L) : "memory");',
        "x32": '__asm__ volatile("syscall" : "=a"(r) : "a"(0x40000000L | 39) : "rcx", "r11", "memory");',
    }[abi]
    code = ('#include <stdio.h>\nint main(void) { long r; puts("before"); fflush(stdout);\n'
            f'{insn}\nprintf("after %ld\\n", r); return 0; }}\n')
    r = sandbox.run(code, language="c")
    assert r.stdout == "before\n", r
    assert (r.status, r.exit_code) == ("killed", -int(signal.SIGSYS))
    host.check()


def test_tiocsti_and_terminals(sandbox, host):
    code = PRELUDE + src(r'''
        import fcntl, termios
        out = {}
        for fd in (0, 1, 2):
            out[f"TIOCSTI {fd}"] = attempt(lambda: fcntl.ioctl(fd, termios.TIOCSTI, b"x"))
            out[f"TIOCLINUX {fd}"] = attempt(lambda: fcntl.ioctl(fd, 0x541C, b"\x06"))
        out["/dev/tty"] = attempt(lambda: os.open("/dev/tty", os.O_RDWR))
        out["openpty"] = attempt(os.openpty)
        out["/dev/console"] = attempt(lambda: os.open("/dev/console", os.O_RDWR))
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    for k, v in out.items():
        if k.startswith("TIOC"):
            assert v == "EPERM", (k, v)
    assert out["/dev/tty"] == "ENOENT" and out["/dev/console"] == "ENOENT"
    assert out["openpty"] in ("ENOENT", "FileNotFoundError"), out
    seen = tried(sandbox, r)
    assert seen is None or seen == {"ioctl(TIOCSTI)", "ioctl(TIOCLINUX)"}, seen
    host.check()


def test_device_nodes(sandbox, host):
    code = PRELUDE + src(r'''
        import stat
        out = {"dev": sorted(os.listdir("/dev"))}
        for d in ("/workspace", "/tmp", "/dev/shm"):
            out["mknod chr " + d] = attempt(lambda: os.mknod(d + "/mem", stat.S_IFCHR | 0o666, os.makedev(1, 1)))
            out["mknod blk " + d] = attempt(lambda: os.mknod(d + "/sda", stat.S_IFBLK | 0o666, os.makedev(8, 0)))
        for p in ("/dev/mem", "/dev/kmem", "/dev/port", "/dev/kmsg", "/dev/sda", "/dev/vda", "/dev/nvme0n1",
                  "/dev/kvm", "/dev/fuse", "/dev/net/tun", "/dev/userfaultfd", "/dev/ptmx", "/dev/tty0",
                  "/dev/cpu/0/msr", "/dev/mqueue", "/proc/kcore", "/proc/sysrq-trigger"):
            out[p] = os.path.exists(p)
        out["read /proc/kmsg"] = attempt(lambda: open("/proc/kmsg", "rb").read(1))
        out["write /dev/null"] = attempt(lambda: open("/dev/null", "w").write("x"))
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert out["dev"] == ["fd", "full", "null", "random", "shm", "stderr", "stdin", "stdout", "urandom", "zero"]
    for k, v in out.items():
        if k.startswith("mknod"):
            assert v == "EPERM", (k, v)
        elif k.startswith("/"):
            assert v is False, k
    assert out["read /proc/kmsg"] == "EACCES" and out["write /dev/null"] == "OK"
    host.check()


def test_cannot_raise_priority_or_limits(sandbox, host):
    code = PRELUDE + src('''
        import resource
        out = {
            "nice": attempt(lambda: os.nice(-1)),
            "setpriority": attempt(lambda: os.setpriority(os.PRIO_PROCESS, 0, -5)),
            "SCHED_FIFO": attempt(lambda: os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))),
            "SCHED_RR": attempt(lambda: os.sched_setscheduler(0, os.SCHED_RR, os.sched_param(1))),
            "ioprio RT": sc(251, 1, 0, 1 << 13),
        }
        for name in ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_RTPRIO", "RLIMIT_MEMLOCK"):
            res = getattr(resource, name)
            soft, hard = resource.getrlimit(res)
            big = resource.RLIM_INFINITY if hard != resource.RLIM_INFINITY else None
            if big is not None:
                out["raise " + name] = attempt(lambda: resource.setrlimit(res, (big, big)))
        print(json.dumps(out))
    ''')
    r = sandbox.run(code)
    assert (r.status, r.exit_code) == ("ok", 0), r
    out = last_json(r)
    assert (out["nice"], out["SCHED_FIFO"], out["SCHED_RR"], out["ioprio RT"]) == ("EPERM",) * 4
    assert out["setpriority"] == "EACCES"
    raised = {k: v for k, v in out.items() if k.startswith("raise")}
    assert {"raise RLIMIT_CPU", "raise RLIMIT_FSIZE", "raise RLIMIT_NOFILE"} <= set(raised)
    assert set(raised.values()) <= {"ValueError", "EPERM"}, raised
    host.check()


# -- state between runs


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


# -- runs side by side


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


class Bug(Exception):
    pass


def bug_if(condition: bool, message: str) -> None:
    if condition:
        raise Bug(message)


def run_children(box: Sandbox) -> dict[int, list[str]]:
    """Host pids of the server's children that have children of their own: right after a
    run returns there must be none (an idle slot has none). Few reads, so it is quick."""
    server = box._proc.pid
    out = {}
    for pid in Path(f"/proc/{server}/task/{server}/children").read_text().split():
        try:
            kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        if kids:
            out[int(pid)] = kids
    return out


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
