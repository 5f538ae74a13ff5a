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
import socket
import struct
from typing import Callable

from . import seccomp, syscalls as sc

NOTIF_RECV = 0xC0502100  # _IOWR('!', 0, struct seccomp_notif): 80 bytes
NOTIF_SEND = 0xC0182101  # _IOWR('!', 1, struct seccomp_notif_resp): 24 bytes
FLAG_CONTINUE = 1
MAX_ENTRIES = 64
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
    if nr in MOUNTS and not setup_done():
        _send(fd, nid, 0, FLAG_CONTINUE)  # the slot's own mounts, before any code runs
        return True
    _send(fd, nid, -errno.EPERM, 0)
    trail.add("denied_syscall", describe(nr, args))
    return True


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
