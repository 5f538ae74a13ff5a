"""The file system a sandboxed run sees.

`build_root` runs once in the fork server (host root, in its own mount namespace): a
read-only tmpfs root holding read-only binds of what the supported languages need
(/usr/bin, /usr/lib, /usr/libexec, /usr/include, the dynamic loader's config), the
sandbox library of Python packages at /opt/pylib when there is one, and nothing else: no /home, /root, /usr/local, /srv, /mnt, /opt, /sys, no project checkout.

`enter_run` runs once per run, in the run's own user and mount namespace: a fresh
size- and inode-limited tmpfs for /workspace (or the session's workspace), /tmp and
/dev/shm, a /proc that shows only the run's own processes, and the hostname.
"""

from __future__ import annotations

import os

from . import syscalls as sc
from .paths import TASK_DIRS, check_task_dirs

USR_DIRS = ("usr/bin", "usr/lib", "usr/lib64", "usr/libexec", "usr/include", "usr/share/zoneinfo")
ETC_COPY = ("ld.so.cache", "ld.so.conf", "localtime", "nsswitch.conf")
ETC_BIND = ("ld.so.conf.d", "alternatives")
DEVICES = ("null", "zero", "full", "random", "urandom")
SANDBOX_UID = 1000
SESSIONS = "/sessions"
PYLIB = "/opt/pylib"
"""Where the sandbox library (packages tools in the sandbox import: numpy, manifold3d) shows."""
RO = sc.MS_RDONLY | sc.MS_NOSUID | sc.MS_NODEV

PASSWD = (
    "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    f"sandbox:x:{SANDBOX_UID}:{SANDBOX_UID}:sandbox:/workspace:/bin/bash\n"
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
)
GROUP = f"root:x:0:\nsandbox:x:{SANDBOX_UID}:\nnogroup:x:65534:\n"


def _bind_ro(src: str, dst: str) -> None:
    sc.mount(src, dst, None, sc.MS_BIND | sc.MS_REC)
    sc.mount("none", dst, None, sc.MS_BIND | sc.MS_REMOUNT | RO)


def build_root(staging: str = "/tmp", pylib: str | None = None) -> None:
    """Assemble the sandbox root on a tmpfs over `staging` and pivot the calling process
    into it. The caller must already be in a private mount namespace. `pylib`, a host
    directory of Python packages (the sandbox library), is bound read-only at PYLIB."""
    sc.mount("none", "/", None, sc.MS_REC | sc.MS_PRIVATE)
    # held open across the tmpfs below, which would hide a library that lives under `staging`
    pylib_fd = os.open(pylib, os.O_PATH | os.O_DIRECTORY) if pylib else None
    sc.mount("tempering-root", staging, "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "size=16m,mode=0755")
    r = staging.rstrip("/")
    _bind_system_dirs(r, pylib_fd)
    _make_etc(r)
    _make_dev(r)
    for d in ("dev/shm", "proc", "tmp", "workspace", SESSIONS.lstrip("/"), ".old", *(t.lstrip("/") for t in TASK_DIRS)):
        os.makedirs(f"{r}/{d}", mode=0o755)
    sc.mount("proc", f"{r}/proc", "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
    sc.mount("tempering-sessions", f"{r}{SESSIONS}", "tmpfs", sc.MS_NOSUID | sc.MS_NODEV, "mode=0711")
    sc.pivot_root(r, f"{r}/.old")
    os.chdir("/")
    sc.umount("/.old", sc.MNT_DETACH)
    os.rmdir("/.old")
    sc.mount("none", "/", None, sc.MS_REMOUNT | RO)
    # Sessions opened later must reach slots made earlier: share, so they propagate.
    sc.mount("none", SESSIONS, None, sc.MS_SHARED)


def _bind_system_dirs(r: str, pylib_fd: int | None) -> None:
    """/bin, /lib* and USR_DIRS read-only from the host (links stay links; no /sbin), and
    the sandbox library at PYLIB."""
    for top in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = "/" + top
        if os.path.islink(host):
            os.symlink(os.readlink(host), f"{r}/{top}")
        elif os.path.isdir(host) and top != "sbin":
            os.makedirs(f"{r}/{top}")
            _bind_ro(host, f"{r}/{top}")
    for d in USR_DIRS:
        if os.path.isdir("/" + d) and not os.path.islink("/" + d):
            os.makedirs(f"{r}/{d}")
            _bind_ro("/" + d, f"{r}/{d}")
    if pylib_fd is not None:
        os.makedirs(f"{r}{PYLIB}")
        _bind_ro(f"/proc/self/fd/{pylib_fd}", f"{r}{PYLIB}")
        os.close(pylib_fd)


def _make_etc(r: str) -> None:
    """/etc: copies of ETC_COPY, read-only binds of ETC_BIND, and our own passwd, group,
    hosts and hostname (no host account or name shows through)."""
    os.makedirs(f"{r}/etc")
    for name in ETC_COPY:
        src = "/etc/" + name
        if os.path.islink(src):
            os.symlink(os.readlink(src), f"{r}/etc/{name}")
        elif os.path.isfile(src):
            with open(src, "rb") as f, open(f"{r}/etc/{name}", "wb") as g:
                g.write(f.read())
    for name in ETC_BIND:
        if os.path.isdir("/etc/" + name):
            os.makedirs(f"{r}/etc/{name}")
            _bind_ro("/etc/" + name, f"{r}/etc/{name}")
    for name, text in (
        ("passwd", PASSWD),
        ("group", GROUP),
        ("hosts", "127.0.0.1 localhost\n::1 localhost\n"),
        ("hostname", "sandbox\n"),
    ):
        with open(f"{r}/etc/{name}", "w") as f:
            f.write(text)


def _make_dev(r: str) -> None:
    """/dev: binds of the DEVICES only, and the standard fd links."""
    os.makedirs(f"{r}/dev")
    for dev in DEVICES:
        open(f"{r}/dev/{dev}", "w").close()
        sc.mount(f"/dev/{dev}", f"{r}/dev/{dev}", None, sc.MS_BIND)
    for i, name in enumerate(("stdin", "stdout", "stderr")):
        os.symlink(f"/proc/self/fd/{i}", f"{r}/dev/{name}")
    os.symlink("/proc/self/fd", f"{r}/dev/fd")


_sessions_fd: int | None = None


def enter_run(disk_mb: int, inodes: int = 16384) -> None:
    """Per-run mounts with default sizes, made before the request arrives. The caller is
    the run's pid 1, with capabilities in its own user and mount namespace."""
    global _sessions_fd
    flags = sc.MS_NOSUID | sc.MS_NODEV
    sc.sethostname("sandbox")
    # Keep a handle on the sessions tree, then hide it behind an empty read-only tmpfs.
    _sessions_fd = os.open(SESSIONS, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    sc.mount("none", SESSIONS, "tmpfs", flags | sc.MS_RDONLY, "size=4k,mode=0555")
    for target, mode in (("/workspace", "0755"), ("/tmp", "1777"), ("/dev/shm", "1777")):
        sc.mount("run", target, "tmpfs", flags, f"size={disk_mb}m,nr_inodes={inodes},mode={mode}")


def adjust_run(disk_mb: int, default_mb: int, session: str | None, inodes: int = 16384,
               workdir: str | None = None, scratch=()) -> None:
    """Once the request is known: the session's workspace (also at `workdir`), scratch
    tmpfs mounts, or sizes other than the default."""
    check_task_dirs(session, workdir, scratch)
    flags = sc.MS_NOSUID | sc.MS_NODEV
    if disk_mb != default_mb:
        targets = ("/tmp", "/dev/shm") if session else ("/workspace", "/tmp", "/dev/shm")
        for target in targets:
            sc.mount("run", target, None, sc.MS_REMOUNT | flags, f"size={disk_mb}m,nr_inodes={inodes}")
    if session:
        sc.umount("/workspace")
        sc.mount(f"/proc/self/fd/{_sessions_fd}/{session}/ws", "/workspace", None, sc.MS_BIND)
        sc.mount("none", "/workspace", None, sc.MS_BIND | sc.MS_REMOUNT | flags)
        if workdir:
            sc.mount("/workspace", workdir, None, sc.MS_BIND)
            sc.mount("none", workdir, None, sc.MS_BIND | sc.MS_REMOUNT | flags)
    for target in scratch or ():
        sc.mount("run", target, "tmpfs", flags, f"size={disk_mb}m,nr_inodes={inodes},mode=0755")


def make_session_dir(session_id: str, disk_mb: int, owner_uid: int) -> str:
    """A session's workspace gets its own tmpfs, so its size limit holds across runs;
    its snapshots sit beside it, out of the runs' sight."""
    base = f"{SESSIONS}/{session_id}"
    os.mkdir(base, 0o711)
    os.mkdir(f"{base}/ws", 0o755)
    sc.mount(f"session-{session_id}", f"{base}/ws", "tmpfs", sc.MS_NOSUID | sc.MS_NODEV,
             f"size={disk_mb}m,nr_inodes=16384,mode=0755,uid={owner_uid},gid={owner_uid}")
    os.mkdir(f"{base}/snap", 0o755)
    os.chown(f"{base}/snap", owner_uid, owner_uid)
    return base


def remove_session_dir(session_id: str) -> None:
    import shutil

    base = f"{SESSIONS}/{session_id}"
    sc.umount(f"{base}/ws", sc.MNT_DETACH)
    shutil.rmtree(base)
