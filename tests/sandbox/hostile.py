"""What the hostile-program tests share: probes the programs run (a raw-syscall prelude, a
memory scanner), readers of their results, and host-side helpers. The tests are in
test_hostile_*.py, one file per family of attack; each checks (a) the attack failed, from
the evidence the program itself printed, (b) the exact status, (c) the host is unchanged and
nothing of the run is left (`host.check()`), and (d) the sandbox still runs `print(1)`
afterwards (also in `host.check()`)."""

from __future__ import annotations

import json
import os
import textwrap
import threading
import time
from pathlib import Path

from tempering.sandbox import Sandbox

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


# -- for the regressions of bugs the suite found: each raises Bug with the evidence


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
