"""The fork server's side of the seccomp listener: what a run tried that the filter stops.

Each slot installs its main filter with a listener (seccomp.build_filter(notify=True)) and
hands the listener's fd to the server before it runs anything. The kernel then parks every
denied call and every connect(2) of the run, and of any process it forks, until the server
answers:

    a denied call   answered with EPERM, as the plain filter would, and recorded as
                    denied_syscall ("ptrace", "socket(AF_PACKET)", "clone(namespace flags)")
    connect(2)      let through unchanged (SECCOMP_USER_NOTIF_FLAG_CONTINUE); recorded as
                    network when its address is not loopback, AF_UNIX or AF_UNSPEC (the
                    network namespace has no route out, so the call then fails by itself)
    a path write    creat, mkdir, unlink, rename, link, symlink, chmod, chown, utime,
                    truncate, mknod (seccomp.WRITES_X86_64), and open/openat with a write flag: let through (the read-only mounts refuse what they must) and
                    recorded as write_outside when the path is outside WRITABLE
    a mount call    let through while the slot makes the run's own mounts; once it has
                    written its set-up-done line (run.SETUP_DONE, before any code runs),
                    answered EPERM and recorded as denied_syscall. The run has no
                    capabilities by then either, so the kernel would refuse it as well.

The record is made outside the sandboxed process, so the program cannot suppress it. It is
not an enforcement point: the filter, the namespaces and the mounts enforce; the address a
connect names is read from the program's memory after the fact and a racing thread could
change it, which can only blur the log, never let a call through that the namespace blocks.

Standard library and sibling modules only: the fork server imports it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import struct
from typing import Callable

from . import seccomp, syscalls as sc

NOTIF_RECV = 0xC0502100  # _IOWR('!', 0, struct seccomp_notif): 80 bytes
NOTIF_SEND = 0xC0182101  # _IOWR('!', 1, struct seccomp_notif_resp): 24 bytes
FLAG_CONTINUE = 1
MAX_ENTRIES = 200
"""Distinct entries kept per run; past it only the total count grows."""

NAMES = {nr: name for name, nr in seccomp.DENIED_X86_64.items()}
NAMES.update({seccomp.SYS_CLONE: "clone", seccomp.SYS_IOCTL: "ioctl", seccomp.SYS_SOCKET: "socket",
              seccomp.SYS_SOCKETPAIR: "socketpair"})
FAMILIES = {v: k for k, v in vars(socket).items() if k.startswith("AF_") and isinstance(v, int)}
IOCTLS = {seccomp.TIOCSTI: "TIOCSTI", seccomp.TIOCLINUX: "TIOCLINUX"}


class Trail:
    """What one run tried: (kind, detail) -> count, at most MAX_ENTRIES distinct entries."""

    __slots__ = ("counts", "total")

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.total = 0

    def add(self, kind: str, detail: str) -> None:
        self.total += 1
        key = (kind, detail)
        if key in self.counts or len(self.counts) < MAX_ENTRIES:
            self.counts[key] = self.counts.get(key, 0) + 1

    def entries(self) -> list[dict]:
        return [{"kind": k, "detail": d, "count": n} for (k, d), n in self.counts.items()]


MOUNTS = set(seccomp.MOUNT_X86_64.values())
NAMES.update({nr: name for name, nr in seccomp.MOUNT_X86_64.items()})
NAMES.update({nr: name for name, nr in seccomp.WRITES_X86_64.items()})
NAMES.update({seccomp.SYS_OPEN: "open", seccomp.SYS_OPENAT: "openat"})
WRITES = set(seccomp.WRITES_X86_64.values()) | {seccomp.SYS_OPEN, seccomp.SYS_OPENAT}
AT_FDCWD = 0xFFFFFF9C  # -100 as the kernel reads an int argument
# (dirfd argument or None, path argument) of each writing call, per path it names
PATH_ARGS: dict[int, tuple[tuple[int | None, int], ...]] = {
    2: ((None, 0),), 85: ((None, 0),), 83: ((None, 0),), 87: ((None, 0),), 84: ((None, 0),),
    82: ((None, 0), (None, 1)), 257: ((0, 1),), 437: ((0, 1),), 258: ((0, 1),), 263: ((0, 1),),
    264: ((0, 1), (2, 3)), 316: ((0, 1), (2, 3)), 88: ((None, 1),), 266: ((1, 2),), 86: ((None, 1),),
    265: ((2, 3),), 90: ((None, 0),), 268: ((0, 1),), 452: ((0, 1),), 76: ((None, 0),), 132: ((None, 0),),
    235: ((None, 0),), 261: ((0, 1),), 280: ((0, 1),), 92: ((None, 0),), 94: ((None, 0),), 260: ((0, 1),),
    133: ((None, 0),), 259: ((0, 1),),
}
WRITABLE = ("/workspace", "/tmp", "/dev/shm", "/app", "/tests")
"""Where a run may write (its tmpfs mounts; a session's workspace shows at /workspace, /app
or /tests). Everything else is read-only or absent."""
HARMLESS = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/stdout", "/dev/stderr",
            "/dev/stdin", "/dev/tty", "/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/")
"""Device nodes and a process's own descriptors: written to all the time (`> /dev/null`)."""


def answer_one(fd: int, trail: Trail, setup_done: Callable[[], bool]) -> bool:
    """Take one parked call off listener `fd`, answer it, and note it in `trail`;
    `setup_done()` says whether the slot has finished its own mounts. False when there was
    nothing to take (the caller died meanwhile)."""
    buf = bytearray(80)
    try:
        fcntl.ioctl(fd, NOTIF_RECV, buf)
    except OSError:
        return False
    nid, pid, _flags, nr = struct.unpack_from("=QIIi", buf)
    args = struct.unpack_from("=6Q", buf, 32)
    if nr == seccomp.SYS_CONNECT:
        where = connect_target(pid, args[1], args[2])
        _send(fd, nid, 0, FLAG_CONTINUE)
        if where is not None:
            trail.add("network", f"connect to {where}")
        return True
    if nr in WRITES:  # read the paths while the caller is parked, then let it go on
        aimed = [p for p in written_paths(pid, nr, args) if not writable(p)]
        _send(fd, nid, 0, FLAG_CONTINUE)  # the mounts decide; this only notes where it aimed
        for path in aimed:
            trail.add("write_outside", f"{NAMES[nr]} {path}")
        return True
    if nr in MOUNTS and not setup_done():
        _send(fd, nid, 0, FLAG_CONTINUE)  # the slot's own mounts, before any code runs
        return True
    _send(fd, nid, -errno.EPERM, 0)
    trail.add("denied_syscall", describe(nr, args))
    return True


def written_paths(pid: int, nr: int, args: tuple[int, ...]) -> list[str]:
    """The paths a writing call names, absolute where they can be resolved (a relative path
    against the caller's working directory or dirfd, read from /proc); unresolvable ones are
    left out."""
    out = []
    for dir_arg, path_arg in PATH_ARGS.get(nr, ()):
        path = read_string(pid, args[path_arg])
        if not path:
            continue
        if not path.startswith("/"):
            dirfd = AT_FDCWD if dir_arg is None else args[dir_arg] & 0xFFFFFFFF
            link = f"/proc/{pid}/cwd" if dirfd == AT_FDCWD else f"/proc/{pid}/fd/{dirfd}"
            try:
                path = os.path.join(os.readlink(link), path)
            except OSError:
                continue
        out.append(os.path.normpath(path))
    return out


def writable(path: str) -> bool:
    if path.startswith(HARMLESS) or path in (h.rstrip("/") for h in HARMLESS):
        return True
    return any(path == w or path.startswith(w + "/") for w in WRITABLE)


def read_string(pid: int, address: int, limit: int = 4096) -> str:
    """A NUL-terminated string at `address` in process `pid`, page by page ("" if unreadable)."""
    out = b""
    while address and len(out) < limit:
        chunk = sc.read_memory(pid, address, 4096 - address % 4096)
        if not chunk:
            break
        end = chunk.find(b"\0")
        if end >= 0:
            return (out + chunk[:end]).decode("utf-8", "replace")
        out += chunk
        address += len(chunk)
    return ""


def _send(fd: int, nid: int, error: int, flags: int) -> None:
    try:
        fcntl.ioctl(fd, NOTIF_SEND, bytearray(struct.pack("=QqiI", nid, 0, error, flags)))
    except OSError:  # ENOENT: the caller was killed while parked; nothing to answer
        pass


def describe(nr: int, args: tuple[int, ...]) -> str:
    """A denied call as the audit log names it."""
    name = NAMES.get(nr, f"syscall {nr}")
    if nr in (seccomp.SYS_SOCKET, seccomp.SYS_SOCKETPAIR):
        family = args[0] & 0xFFFFFFFF
        detail = FAMILIES.get(family, str(family))
        if family == seccomp.AF_NETLINK:
            detail += f", protocol {args[2] & 0xFFFFFFFF}"
        return f"{name}({detail})"
    if nr == seccomp.SYS_CLONE:
        return "clone(namespace flags)"
    if nr == seccomp.SYS_IOCTL:
        return f"ioctl({IOCTLS.get(args[1] & 0xFFFFFFFF, hex(args[1]))})"
    return name


def connect_target(pid: int, address: int, length: int) -> str | None:
    """Where a connect(2) of `pid` was going ("1.2.3.4:53"), or None when it stays inside
    the sandbox (loopback, AF_UNIX, AF_UNSPEC) or cannot be read."""
    raw = sc.read_memory(pid, address, min(int(length), 128)) if address else b""
    if len(raw) < 2:
        return None
    family = struct.unpack_from("=H", raw)[0]
    if family == socket.AF_INET and len(raw) >= 8:
        port, ip = struct.unpack_from("!H4s", raw, 2)
        if ip[0] == 127 or ip == bytes(4):
            return None
        return f"{socket.inet_ntop(socket.AF_INET, ip)}:{port}"
    if family == socket.AF_INET6 and len(raw) >= 24:
        port = struct.unpack_from("!H", raw, 2)[0]
        ip = raw[8:24]
        mapped_v4 = ip[:12] == bytes(10) + b"\xff\xff"
        if ip in (bytes(15) + b"\x01", bytes(16)) or (mapped_v4 and ip[12] == 127):
            return None
        return f"[{socket.inet_ntop(socket.AF_INET6, ip)}]:{port}"
    if family in (socket.AF_UNIX, socket.AF_UNSPEC):
        return None
    return f"family {FAMILIES.get(family, family)}"
