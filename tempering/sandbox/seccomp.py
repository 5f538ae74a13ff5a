"""A seccomp-BPF deny-list, assembled by hand so the fork server needs no library.

Denied calls return EPERM (ENOSYS for clone3, so libc falls back to clone, whose flags
we can inspect). In the fork server's filter they go to the server first (notify=True,
SECCOMP_RET_USER_NOTIF): it records the attempt for the audit log and answers EPERM itself,
so the call fails exactly as before and the program cannot hide that it tried. connect(2)
goes there too, and the server lets it continue after noting where it was going; so do the
mount calls, which the server lets through only until the slot reports its set-up done (that
filter then replaces the second, mounts-only one, whose EPERM would outrank the listener), and
the calls that write a path (WRITES_X86_64, and open/openat with a write flag), which it lets
continue after noting those aimed outside the writable places. Any other architecture or the x32 ABI kills the process. `socket` and
`socketpair` are allowed for the families in SOCKET_FAMILIES only (and netlink for its
route protocol only): a network namespace confines those, not vsock, packet or the rest,
and refusing them in the filter also stops the kernel loading their modules on demand.
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

from . import syscalls

AUDIT_ARCH_X86_64 = 0xC000003E

# x86_64 numbers. What each group is for:
DENIED_X86_64 = {
    # debugging and reading other processes' memory
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
    # kernel attack surface that sandboxed code never needs
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
    "io_uring_enter": 426, "io_uring_register": 427,
    # kernel keyrings
    "keyctl": 250, "add_key": 248, "request_key": 249,
    # modules and kexec
    "init_module": 175, "finit_module": 313, "delete_module": 176, "create_module": 174,
    "get_kernel_syms": 177, "query_module": 178, "kexec_load": 246, "kexec_file_load": 320,
    # namespaces
    "chroot": 161, "unshare": 272, "setns": 308,
    # host administration
    "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163, "settimeofday": 164,
    "clock_settime": 227, "clock_adjtime": 305, "adjtimex": 159, "sethostname": 170,
    "setdomainname": 171, "syslog": 103, "vhangup": 153, "quotactl": 179, "quotactl_fd": 443,
    "nfsservctl": 180, "lookup_dcookie": 212, "uselib": 134, "_sysctl": 156, "iopl": 172,
    "ioperm": 173, "open_by_handle_at": 304, "name_to_handle_at": 303, "migrate_pages": 256,
    "move_pages": 279,
}
# Mounting stays allowed until the run's own mounts are made, then a second filter denies it.
MOUNT_X86_64 = {
    "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429,
    "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
}
# Calls that make, remove or rename a path: the listener notes those outside the writable
# places (notify.py), which the read-only mounts refuse anyway. open/openat only with
# OPEN_WRITE_FLAGS (O_WRONLY | O_RDWR | O_CREAT | O_TRUNC).
WRITES_X86_64 = {"creat": 85, "mkdir": 83, "mkdirat": 258, "unlink": 87, "unlinkat": 263, "rmdir": 84,
                 "rename": 82, "renameat": 264, "renameat2": 316, "openat2": 437, "symlink": 88, "symlinkat": 266,
                 "link": 86, "linkat": 265, "chmod": 90, "fchmodat": 268, "fchmodat2": 452, "truncate": 76,
                 "utime": 132, "utimes": 235, "futimesat": 261, "utimensat": 280, "chown": 92, "lchown": 94,
                 "fchownat": 260, "mknod": 133, "mknodat": 259}
SYS_OPEN, SYS_OPENAT = 2, 257
OPEN_WRITE_FLAGS = 0x1 | 0x2 | 0x40 | 0x200
# socket(2)/socketpair(2) domains allowed (args[0]); every other one gets EPERM.
SOCKET_FAMILIES = {"AF_UNIX": 1, "AF_INET": 2, "AF_INET6": 10}
# AF_NETLINK is allowed for these protocols (args[2]) only: glibc's getaddrinfo and
# if_nameindex read addresses and links with NETLINK_ROUTE; without CAP_NET_ADMIN a run
# can only read its own, empty namespace. Audit, uevent, netfilter, generic... get EPERM.
AF_NETLINK = 16
NETLINK_PROTOCOLS = {"NETLINK_ROUTE": 0}
SYS_SOCKET, SYS_SOCKETPAIR = 41, 53
SYS_CLONE, SYS_CLONE3, SYS_IOCTL, SYS_CONNECT = 56, 435, 16, 42
SYS_SECCOMP, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER = 317, 1, 8
X32_SYSCALL_BIT = 0x40000000
TIOCSTI, TIOCLINUX = 0x5412, 0x541C

# BPF opcodes and seccomp return values.
LD_W_ABS, JEQ_K, JGE_K, JSET_K, RET_K = 0x20, 0x15, 0x35, 0x45, 0x06
RET_ALLOW = 0x7FFF0000
RET_KILL_PROCESS = 0x80000000
RET_EPERM = 0x00050000 | errno.EPERM
RET_USER_NOTIF = 0x7FC00000
RET_ENOSYS = 0x00050000 | errno.ENOSYS
OFF_NR, OFF_ARCH = 0, 4


def _arg_low(i: int) -> int:
    return 16 + 8 * i  # low 32 bits of args[i] on a little-endian machine


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


def build_filter(mounts_only: bool = False, notify: bool = False) -> list[tuple[int, int, int, int]]:
    """The program as (code, jt, jf, k) tuples: the main deny-list, or with
    mounts_only the second filter that ends mounting. With `notify`, every refusal of the
    main list and every connect(2) is handed to the listener (see the module docstring)."""
    if syscalls.MACHINE != "x86_64":
        raise OSError(f"the seccomp table is written for x86_64 only, not {syscalls.MACHINE}")
    p = [
        _insn(LD_W_ABS, OFF_ARCH),
        _insn(JEQ_K, AUDIT_ARCH_X86_64, jt=1, jf=0),
        _insn(RET_K, RET_KILL_PROCESS),
        _insn(LD_W_ABS, OFF_NR),
        _insn(JGE_K, X32_SYSCALL_BIT, jt=0, jf=1),
        _insn(RET_K, RET_KILL_PROCESS),
    ]
    if mounts_only:
        for nr in sorted(MOUNT_X86_64.values()):
            p += [_insn(JEQ_K, nr, jt=0, jf=1), _insn(RET_K, RET_EPERM)]
        return p + [_insn(RET_K, RET_ALLOW)]
    deny = RET_USER_NOTIF if notify else RET_EPERM
    for nr in sorted(DENIED_X86_64.values()):
        p += [_insn(JEQ_K, nr, jt=0, jf=1), _insn(RET_K, deny)]
    # glibc tries clone3 for every thread and child: not an attempt worth recording
    p += [_insn(JEQ_K, SYS_CLONE3, jt=0, jf=1), _insn(RET_K, RET_ENOSYS)]
    if notify:
        # The server lets these continue while the slot makes its own mounts and refuses
        # them once it reports set-up done (notify.py), so the audit log sees a run's mounts.
        for nr in [SYS_CONNECT, *sorted(MOUNT_X86_64.values()), *sorted(WRITES_X86_64.values())]:
            p += [_insn(JEQ_K, nr, jt=0, jf=1), _insn(RET_K, RET_USER_NOTIF)]
        # open and openat: only when they may write (the audit log's writes outside the workspace)
        for nr, arg in ((SYS_OPEN, 1), (SYS_OPENAT, 2)):
            p += [
                _insn(JEQ_K, nr, jt=0, jf=4),
                _insn(LD_W_ABS, _arg_low(arg)),
                _insn(JSET_K, OPEN_WRITE_FLAGS, jt=0, jf=1),
                _insn(RET_K, RET_USER_NOTIF),
                _insn(RET_K, RET_ALLOW),
            ]
    # clone: refuse any flag that makes a namespace.
    p += [
        _insn(JEQ_K, SYS_CLONE, jt=0, jf=4),
        _insn(LD_W_ABS, _arg_low(0)),
        _insn(JSET_K, syscalls.NAMESPACE_FLAGS, jt=0, jf=1),
        _insn(RET_K, deny),
        _insn(RET_K, RET_ALLOW),
    ]
    p += _socket_rules(deny)
    # ioctl: refuse pushing bytes into a terminal's input queue.
    p += [
        _insn(JEQ_K, SYS_IOCTL, jt=0, jf=5),
        _insn(LD_W_ABS, _arg_low(1)),
        _insn(JEQ_K, TIOCSTI, jt=1, jf=0),
        _insn(JEQ_K, TIOCLINUX, jt=0, jf=1),
        _insn(RET_K, deny),
        _insn(RET_K, RET_ALLOW),
    ]
    p.append(_insn(RET_K, RET_ALLOW))
    return p


def _socket_rules(deny: int = RET_EPERM) -> list[tuple[int, int, int, int]]:
    """socket and socketpair: allow the families of SOCKET_FAMILIES, netlink for
    NETLINK_PROTOCOLS only, and return `deny` for everything else."""
    fams, protos = sorted(SOCKET_FAMILIES.values()), sorted(NETLINK_PROTOCOLS.values())
    body = [_insn(LD_W_ABS, _arg_low(0))]
    # each family test jumps to the allow at the end of this block when it matches
    allow_at = 1 + len(fams) + 1 + 1 + 1 + len(protos) + 1  # index of the RET_ALLOW in `body`
    for f in fams:
        body.append(_insn(JEQ_K, f, jt=allow_at - len(body) - 1, jf=0))
    body += [_insn(JEQ_K, AF_NETLINK, jt=1, jf=0), _insn(RET_K, deny), _insn(LD_W_ABS, _arg_low(2))]
    for pr in protos:
        body.append(_insn(JEQ_K, pr, jt=allow_at - len(body) - 1, jf=0))
    body.append(_insn(RET_K, deny))
    body.append(_insn(RET_K, RET_ALLOW))
    assert len(body) == allow_at + 1
    # after loading args the syscall number is gone from the accumulator: this block
    # ends in a return on every path, so nothing after it runs for these two calls
    head = [_insn(JEQ_K, SYS_SOCKET, jt=1, jf=0), _insn(JEQ_K, SYS_SOCKETPAIR, jt=0, jf=len(body))]
    return head + body


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def compiled(mounts_only: bool = False, notify: bool = False) -> bytes:
    """The filter as the kernel takes it (struct sock_filter[])."""
    return b"".join(struct.pack("=HBBI", c, jt, jf, k) for c, jt, jf, k in build_filter(mounts_only, notify))


def notify_supported() -> bool:
    """Whether this kernel lets a listener let a call continue (SECCOMP_USER_NOTIF_FLAG_CONTINUE,
    Linux 5.5), which connect(2) needs; older kernels get the plain EPERM filter."""
    try:
        major, minor = (int(x) for x in os.uname().release.split(".")[:2])
    except ValueError:
        return False
    return (major, minor) >= (5, 5)


class Filter:
    """A compiled filter with its kernel argument built once (in the fork server), so
    installing it in a run is one prctl and touches little memory."""

    def __init__(self, program: bytes) -> None:
        if not program or len(program) % 8:
            raise ValueError("a seccomp program is a non-empty array of 8-byte instructions")
        self._buf = ctypes.create_string_buffer(program, len(program))
        self._fprog = _SockFprog(len(program) // 8, ctypes.cast(self._buf, ctypes.c_void_p))
        self._arg = ctypes.c_void_p(ctypes.addressof(self._fprog))

    def install(self, listener: bool = False) -> int | None:
        """Install on the calling process; with `listener`, return the notification fd
        (the filter must have been built with notify=True)."""
        if not listener:
            syscalls.prctl(syscalls.PR_SET_SECCOMP, syscalls.SECCOMP_MODE_FILTER, self._arg)
            return None
        return syscalls.seccomp_with_listener(SYS_SECCOMP, SECCOMP_SET_MODE_FILTER,
                                              SECCOMP_FILTER_FLAG_NEW_LISTENER, self._arg)


def install(program: bytes | None = None) -> None:
    """Install the filter on the calling process (no_new_privs must already be set)."""
    raw = program if program is not None else compiled()
    if not raw:
        raise ValueError("empty seccomp program")
    buf = ctypes.create_string_buffer(raw, len(raw))
    fprog = _SockFprog(len(raw) // 8, ctypes.cast(buf, ctypes.c_void_p))
    syscalls.prctl(
        syscalls.PR_SET_SECCOMP, syscalls.SECCOMP_MODE_FILTER, ctypes.c_void_p(ctypes.addressof(fprog))
    )
