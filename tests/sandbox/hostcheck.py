"""The host as the sandbox tests see it: its processes (and which are the fork server's),
processes planted as nobody, cgroups left by servers, and the files nobody owns. conftest.py
builds its host checks from these."""

from __future__ import annotations

import hashlib
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

NOBODY = 65534  # the host uid every sandboxed process runs as


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    uid: int
    state: str
    nspid: tuple[str, ...]
    cmdline: bytes


def processes() -> dict[int, Proc]:
    out: dict[int, Proc] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            status = Path(f"/proc/{d}/status").read_text()
            cmdline = Path(f"/proc/{d}/cmdline").read_bytes()
        except OSError:
            continue
        f = {}
        for line in status.splitlines():
            k, _, v = line.partition(":")
            f[k] = v.strip()
        out[int(d)] = Proc(int(d), int(f["PPid"]), int(f["Uid"].split()[0]), f["State"][:1],
                           tuple(f.get("NSpid", "").split()), cmdline)
    return out


def is_fork_server(p: Proc) -> bool:
    return p.uid == 0 and b"tempering.sandbox.server" in p.cmdline


def ancestors(pid: int, procs: dict[int, Proc]) -> list[int]:
    out, seen = [], set()
    while pid in procs and pid not in seen:
        seen.add(pid)
        pid = procs[pid].ppid
        out.append(pid)
    return out


def descendants(root: int, procs: dict[int, Proc]) -> list[Proc]:
    return [p for p in procs.values() if root in ancestors(p.pid, procs)]


PLANTED = "TEMPERING_TEST_PLANTED"


def plant_nobody(argv: list[str]) -> subprocess.Popen:
    """A host process of uid 65534 that a test starts on purpose (the guard must catch it,
    or a run must not be able to kill it). It carries this pytest process's pid in its
    environment, so the guards of other xdist workers, which cannot know of it, pass it by."""
    return subprocess.Popen(argv, user=NOBODY, group=NOBODY, env={"PATH": "/usr/bin:/bin", PLANTED: str(os.getpid())})


def _planted_elsewhere(pid: int) -> bool:
    try:
        env = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False
    mark = f"{PLANTED}=".encode()
    return any(v.startswith(mark) and v != mark + str(os.getpid()).encode() for v in env)


def foreign_nobody() -> frozenset[tuple[int, bytes]]:
    """(pid, cmdline) of the uid-65534 processes outside every fork server's tree: an
    escapee would be one (reparented out of its PID namespace). Processes another test
    process planted on purpose (plant_nobody) are not counted."""
    procs = processes()
    servers = {p.pid for p in procs.values() if is_fork_server(p)}
    return frozenset((p.pid, p.cmdline) for p in procs.values()
                     if p.uid == NOBODY and not servers & set(ancestors(p.pid, procs))
                     and not _planted_elsewhere(p.pid))


# How long a foreign process must stay to count: another worker's spawn or exit takes
# milliseconds; an escapee stays until someone kills it.
FOREIGN_WINDOW_S = 15


def lasting_foreign(before: frozenset[tuple[int, bytes]], window_s: float = FOREIGN_WINDOW_S) -> frozenset:
    """The foreign uid-65534 processes not in `before` that are still there, same pid and
    still outside every server, at each re-read over `window_s`. Under pytest-xdist another
    worker's sandboxed processes look foreign for a moment (caught mid-spawn or mid-exit, a
    parent already gone from the /proc listing); an escapee stays. Returns at once when
    nothing is new, so a single-process run reads /proc once, as before."""
    old = {pid for pid, _ in before}
    found = {pid: cmd for pid, cmd in foreign_nobody() if pid not in old}
    deadline = time.monotonic() + window_s
    while found and time.monotonic() < deadline:
        time.sleep(0.05)
        now = dict(foreign_nobody())
        found = {pid: cmd for pid, cmd in found.items() if pid in now}
    return frozenset(found.items())


# -- host cgroups


def cgroup_dirs(server_pid: int) -> list[Path]:
    """The server's tempering-<pid> directories, one per controller it uses."""
    out = []
    try:
        lines = Path(f"/proc/{server_pid}/cgroup").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        _, controllers, path = line.split(":", 2)
        for ctl in controllers.split(",") if controllers else ["unified"]:
            base = Path("/sys/fs/cgroup") / (ctl if ctl != "unified" else "") / path.lstrip("/")
            if ctl in ("memory", "pids", "cpuacct", "unified") and (base / f"tempering-{server_pid}").is_dir():
                out.append(base / f"tempering-{server_pid}")
    return out


def dead_server_groups() -> set[str]:
    """tempering-<pid> cgroup directories whose server no longer runs (leaked)."""
    def subdirs(d: Path) -> list[Path]:
        # another process's server (another pytest-xdist worker's) may remove its group meanwhile
        try:
            return [p for p in d.iterdir() if p.is_dir()]
        except OSError:
            return []

    out = set()
    for ctl in ("memory", "pids", "cpuacct"):
        root = Path("/sys/fs/cgroup") / ctl
        if not root.is_dir():
            continue
        for parent in [root, *subdirs(root)]:
            for sub in [parent, *subdirs(parent)]:
                try:
                    entries = list(sub.iterdir())
                except OSError:
                    continue
                for e in entries:
                    pid = e.name.removeprefix("tempering-")
                    if e.name.startswith("tempering-") and pid.isdigit() and not Path(f"/proc/{pid}").exists():
                        out.add(str(e))
    return out


# -- host files


def _sha(path: str) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return None


def _owned_by_nobody(root: str, depth: int, skip=(".git", ".venv", "node_modules")) -> set[str]:
    out = set()

    def walk(d: str, level: int) -> None:
        try:
            entries = list(os.scandir(d))
        except OSError:
            return
        for e in entries:
            try:
                st = e.stat(follow_symlinks=False)
            except OSError:
                continue
            if st.st_uid == NOBODY:
                out.add(e.path)
            if level < depth and e.is_dir(follow_symlinks=False) and e.name not in skip:
                walk(e.path, level + 1)

    walk(root, 1)
    return out
