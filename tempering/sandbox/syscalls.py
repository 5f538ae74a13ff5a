"""The Linux calls the sandbox needs that Python 3.11's `os` module lacks, via libc.

Standard library only: this module is imported by the fork server, which runs under the
system Python with no site-packages.
"""

from __future__ import annotations

import ctypes
import os

# Not ctypes.util.find_library: it drags in subprocess, tempfile and more, and every
# module the fork server holds makes each fork slower.
_libc = ctypes.CDLL("libc.so.6", use_errno=True)

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
NAMESPACE_FLAGS = (
    CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET
)

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18
MS_SHARED = 1 << 20
MNT_DETACH = 0x2

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}
_SYS_CAPSET = {"x86_64": 126, "aarch64": 91}
MACHINE = os.uname().machine


def _check(ret: int, what: str) -> int:
    if ret == -1:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


def unshare(flags: int) -> None:
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, nstype: int) -> None:
    _check(_libc.setns(ctypes.c_int(fd), ctypes.c_int(nstype)), "setns")


def mount(source: str, target: str, fstype: str | None, flags: int = 0, data: str | None = None) -> None:
    _check(
        _libc.mount(
            source.encode(),
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {source} on {target}",
    )


def umount(target: str, flags: int = 0) -> None:
    _check(_libc.umount2(target.encode(), ctypes.c_int(flags)), f"umount {target}")


def pivot_root(new_root: str, put_old: str) -> None:
    nr = _SYS_PIVOT_ROOT[MACHINE]
    _check(_libc.syscall(ctypes.c_long(nr), new_root.encode(), put_old.encode()), "pivot_root")


def prctl(option: int, arg2: int = 0, arg3: int | ctypes.c_void_p = 0, arg4: int = 0, arg5: int = 0) -> int:
    a3 = arg3 if isinstance(arg3, ctypes.c_void_p) else ctypes.c_ulong(arg3)
    return _check(
        _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), a3, ctypes.c_ulong(arg4), ctypes.c_ulong(arg5)),
        f"prctl {option}",
    )


def sethostname(name: str) -> None:
    raw = name.encode()
    _check(_libc.sethostname(raw, ctypes.c_size_t(len(raw))), "sethostname")


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def clear_capabilities() -> None:
    """Empty the ambient, effective, permitted and inheritable sets (the bounding set is
    emptied separately, earlier, with PR_CAPBSET_DROP)."""
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    nr = _SYS_CAPSET[MACHINE]
    _check(_libc.syscall(ctypes.c_long(nr), ctypes.byref(header), ctypes.byref(data)), "capset")


def set_no_new_privs() -> None:
    prctl(PR_SET_NO_NEW_PRIVS, 1)


def set_parent_death_signal(sig: int) -> None:
    prctl(PR_SET_PDEATHSIG, sig)


def seccomp_with_listener(nr: int, op: int, flags: int, fprog: ctypes.c_void_p) -> int:
    """seccomp(2) installing a filter that hands calls to a listener; returns its fd."""
    return _check(_libc.syscall(ctypes.c_long(nr), ctypes.c_uint(op), ctypes.c_uint(flags), fprog), "seccomp")


class _IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def read_memory(pid: int, address: int, size: int) -> bytes:
    """`size` bytes at `address` in process `pid` (process_vm_readv); fewer when the range
    ends in unmapped memory, b"" when none can be read."""
    buf = ctypes.create_string_buffer(size)
    local, remote = _IoVec(ctypes.cast(buf, ctypes.c_void_p), size), _IoVec(ctypes.c_void_p(address), size)
    _libc.process_vm_readv.restype = ctypes.c_ssize_t
    got = _libc.process_vm_readv(ctypes.c_int(pid), ctypes.byref(local), ctypes.c_ulong(1), ctypes.byref(remote),
                                 ctypes.c_ulong(1), ctypes.c_ulong(0))
    return buf.raw[:got] if got > 0 else b""
