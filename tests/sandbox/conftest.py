"""Fixtures for the sandbox tests: a started sandbox, host canaries and secrets, and a
view of the host (processes, mounts, cgroups, files) to prove a hostile run left it as
it was and the sandbox still works.

    def test_x(sandbox, host):
        r = sandbox.run(...)
        ...                       # containment and status asserts
        host.check()              # host unchanged, nothing left behind, sandbox healthy
"""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tempering.errors import SandboxUnavailable
from tempering.sandbox import Limits, Sandbox

NOBODY = 65534  # the host uid every sandboxed process runs as
REPO = Path(__file__).resolve().parents[2]
# A test whose program is meant to run away sets a tight limit on that program (TIGHT_S,
# via `tight()`) and asserts how the run ended (status, detail, exit code, processes gone),
# never how fast. Every other run gets limits far above what it needs, so a slow or loaded
# machine cannot turn a passing run into a timeout. Tests derive theirs from `sandbox.limits`.
TIGHT_S = 2
GENEROUS_S = 60
HOSTILE_LIMITS = Limits(wall_s=GENEROUS_S, cpu_s=GENEROUS_S, memory_mb=256, processes=32, disk_mb=16,
                        compile_wall_s=GENEROUS_S, compile_cpu_s=GENEROUS_S)


def tight_limits(limits: Limits, wall: bool = True, cpu: bool = True) -> Limits:
    """`limits` with a tight wall and/or CPU limit for a program that runs away; the
    other stays generous, so the limit under test is the one that ends the run."""
    return limits.with_(**({"wall_s": TIGHT_S} if wall else {}), **({"cpu_s": TIGHT_S} if cpu else {}))


@pytest.fixture
def tight():
    """`tight(limits, wall=True, cpu=True)`: see tight_limits."""
    return tight_limits
PWNED = "hostile-pwned"  # the name hostile programs try to create everywhere
# Host directories where a file named PWNED must never appear.
PWN_DIRS = ["/", "/tmp", "/var/tmp", "/dev/shm", "/root", "/home", "/work", str(REPO), str(REPO / "tempering"),
            "/etc", "/usr/bin", "/usr/lib", "/usr/local/bin", "/usr/lib/python3.11", "/usr/lib/python3/dist-packages"]
# Host files a hostile run must not change (hashed before and after).
SYSTEM_FILES = ["/etc/passwd", "/etc/shadow", "/etc/group", "/etc/hosts", "/etc/hostname",
                "/usr/lib/python3.11/os.py", "/usr/lib/python3.11/site.py", "/usr/bin/python3.11"]


# -- the sandbox


def start_or_skip(box: Sandbox) -> Sandbox:
    """Start `box`; skip when this machine cannot isolate runs, unless the sandbox is
    required (TEMPERING_REQUIRE_SANDBOX=1, as in CI), where that is a failure."""
    try:
        return box.start()
    except SandboxUnavailable as e:
        if os.environ.get("TEMPERING_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"TEMPERING_REQUIRE_SANDBOX=1 but the sandbox is unavailable: {e}", pytrace=False)
        pytest.skip(f"sandbox unavailable on this machine ({e}); set TEMPERING_REQUIRE_SANDBOX=1 to fail instead")


IN_PROCESS_ONLY = {"test_host_check_catches_leftovers"}
"""Tests of the host check itself, not of the sandbox: nothing the service could change."""


def pytest_generate_tests(metafunc):
    """The hostile suite runs twice: in-process, and through the sandbox service over HTTP."""
    if (metafunc.module.__name__.rpartition(".")[2].startswith("test_hostile") and "sandbox" in metafunc.fixturenames
            and metafunc.function.__name__ not in IN_PROCESS_ONLY):
        metafunc.parametrize("sandbox", ["in-process", "service"], indirect=True, scope="module")


class ThroughService:
    """The fixture's sandbox reached over HTTP: `run` and `session` go through a SandboxPool to
    `temper sandbox serve`'s app (in a thread of this process) over the same Sandbox, so the
    host checks still see its fork server; everything else is the Sandbox's own."""

    def __init__(self, box: Sandbox) -> None:
        import threading

        import uvicorn

        from tempering.sandbox.remote import SandboxPool
        from tempering.server.app import Settings, create_app

        token = uuid.uuid4().hex
        app = create_app(Settings(tokens={token: "hostile"}, workers=box.pool_size, limits=box.limits), box)
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning",
                                                     lifespan="off"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + GENEROUS_S
        while not self._server.started:
            assert time.monotonic() < deadline and self._thread.is_alive(), "the service did not start"
            time.sleep(0.01)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self._box = box
        self._pool = SandboxPool([f"http://127.0.0.1:{port}"], token=token, limits=box.limits, retries=0,
                                 grace_s=GENEROUS_S)

    def run(self, *args, **kwargs):
        return self._pool.run(*args, **kwargs)

    def session(self, language: str = "bash", limits: Limits | None = None):
        return self._pool.session(language, limits or self._box.limits)

    def stop(self) -> None:
        self._pool.close()
        self._server.should_exit = True
        self._thread.join(GENEROUS_S)

    def __getattr__(self, name: str):
        return getattr(self._box, name)


@pytest.fixture(scope="module")
def sandbox(request):
    box = start_or_skip(Sandbox(limits=HOSTILE_LIMITS, pool_size=2))
    server = box._proc.pid
    groups = cgroup_dirs(server)
    via = ThroughService(box) if getattr(request, "param", "in-process") == "service" else None
    yield via or box
    if via is not None:
        via.stop()
    box.close()
    # the server is gone, with every slot and every cgroup it made
    deadline = time.monotonic() + GENEROUS_S
    while time.monotonic() < deadline and (Path(f"/proc/{server}").exists() or any(g.exists() for g in groups)):
        time.sleep(0.05)
    assert not Path(f"/proc/{server}").exists(), "the fork server outlived close()"
    assert [g for g in groups if g.exists()] == [], "cgroups left after close()"
    assert [p for p in processes().values() if p.uid == NOBODY and p.ppid == server] == []


@pytest.fixture
def make_sandbox():
    """Factory for extra sandboxes (e.g. started with a poisoned environment); each is
    closed at the end of the test, and must leave no process or cgroup behind."""
    made = []

    def make(limits: Limits = HOSTILE_LIMITS, pool_size: int = 1) -> Sandbox:
        box = start_or_skip(Sandbox(limits=limits, pool_size=pool_size))
        made.append((box, box._proc.pid, cgroup_dirs(box._proc.pid)))
        return box

    yield make
    for box, server, groups in made:
        box.close()
        deadline = time.monotonic() + GENEROUS_S
        while time.monotonic() < deadline and (Path(f"/proc/{server}").exists() or any(g.exists() for g in groups)):
            time.sleep(0.05)
        assert not Path(f"/proc/{server}").exists() and not any(g.exists() for g in groups)


# -- host processes


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


@pytest.fixture(scope="session")
def secrets():
    """Host secrets a run must never see: files under /root, /tmp and the project, whose
    content (and file name) is a random `HOSTILE-SECRET-<hex>` value."""
    value = f"HOSTILE-SECRET-{uuid.uuid4().hex}"
    tag = uuid.uuid4().hex[:12]
    paths = [Path(f"/root/.tempering-hostile-{tag}"), Path(f"/tmp/tempering-hostile-{tag}"),
             REPO / "tests" / "sandbox" / f".hostile-secret-{tag}"]
    made = []
    for p in paths:
        try:
            p.write_text(value + "\n")
            made.append(p)
        except OSError:
            pass
    yield {"value": value, "paths": [str(p) for p in made]}
    for p in made:
        p.unlink(missing_ok=True)


@dataclass
class HostState:
    mounts: frozenset[str]
    files: dict[str, str | None]
    pwned: list[str]
    nobody_files: frozenset[str]
    foreign_nobody: frozenset[tuple[int, bytes]]
    dead_groups: frozenset[str]
    servers: frozenset[int]
    """Fork servers this test process started (its descendants)."""
    hostname: str


@pytest.fixture
def plant():
    """`plant(argv)`: see plant_nobody."""
    return plant_nobody


@pytest.fixture
def foreign_left():
    """`foreign_left(before)`: see lasting_foreign."""
    return lasting_foreign


@pytest.fixture
def host_snapshot(secrets):
    """A function that captures the host state a sandboxed run must not change."""

    def snap() -> HostState:
        nobody_files = set()
        for root, depth in (("/tmp", 3), ("/var/tmp", 2), ("/dev/shm", 2), ("/root", 1), (str(REPO), 6)):
            nobody_files |= _owned_by_nobody(root, depth)
        return HostState(
            mounts=frozenset(Path("/proc/self/mountinfo").read_text().splitlines()),
            files={p: _sha(p) for p in SYSTEM_FILES + secrets["paths"]},
            pwned=[os.path.join(d, PWNED) for d in PWN_DIRS if os.path.lexists(os.path.join(d, PWNED))],
            nobody_files=frozenset(nobody_files),
            foreign_nobody=foreign_nobody(),
            dead_groups=frozenset(dead_server_groups()),
            servers=frozenset(p.pid for p in descendants(os.getpid(), processes()) if is_fork_server(p)),
            hostname=socket.gethostname(),
        )

    return snap


def wait_idle(box: Sandbox, timeout: float = GENEROUS_S) -> None:
    """Wait until the server is back to its idle pool: every uid-65534 process under it
    is a ready slot (its direct child, pid 1 of its own namespace, nothing under it), and
    each of its cgroups holds exactly one such slot. Fails with what is left otherwise."""
    server = box._proc.pid
    deadline = time.monotonic() + timeout
    while True:
        procs = processes()
        mine = descendants(server, procs)
        slots = {p.pid for p in mine if p.ppid == server and p.uid == NOBODY and p.nspid[-1:] == ("1",)
                 and p.state in "SR"}
        extra = [p for p in mine if p.pid not in slots]
        groups: dict[str, list[int]] = {}
        for top in cgroup_dirs(server):
            for g in top.iterdir():
                if g.is_dir():
                    try:
                        groups[str(g)] = [int(x) for x in (g / "cgroup.procs").read_text().split()]
                    except OSError:
                        groups[str(g)] = [-1]
        bad_groups = {g: pids for g, pids in groups.items() if len(pids) != 1 or pids[0] not in slots}
        per_ctl = {str(t): sum(1 for g in t.iterdir() if g.is_dir()) for t in cgroup_dirs(server)}
        if not extra and len(slots) == box.pool_size and not bad_groups \
                and all(n == box.pool_size for n in per_ctl.values()):
            return
        if time.monotonic() > deadline:
            raise AssertionError(
                f"the sandbox did not return to idle: slots={sorted(slots)} pool={box.pool_size} "
                f"leftover processes={[(p.pid, p.ppid, p.uid, p.state, p.nspid, p.cmdline[:80]) for p in extra]} "
                f"cgroups not holding exactly one idle slot={bad_groups} groups per controller={per_ctl}")
        time.sleep(0.02)


class HostGuard:
    def __init__(self, box: Sandbox, snap) -> None:
        self.box, self.snap = box, snap
        self.before = snap()

    def check(self, box: Sandbox | None = None) -> None:
        """(c) the host is as it was and nothing of the runs is left; (d) the sandbox works."""
        box = box or self.box
        assert box._proc is not None and box._proc.poll() is None, "the fork server died"
        wait_idle(box)
        after = self.snap()
        b = self.before
        assert after.pwned == [], f"hostile files appeared on the host: {after.pwned}"
        assert after.files == b.files, "host files changed: " + ", ".join(
            k for k in b.files if after.files.get(k) != b.files[k])
        assert after.mounts == b.mounts, f"host mounts changed: +{sorted(after.mounts - b.mounts)} " \
                                         f"-{sorted(b.mounts - after.mounts)}"
        assert after.nobody_files - b.nobody_files == frozenset(), "files owned by uid 65534 appeared on the host"
        escaped = lasting_foreign(b.foreign_nobody)
        assert escaped == frozenset(), f"uid 65534 processes outside any fork server appeared on the host: {escaped}"
        # only this process's servers: under pytest-xdist another worker may kill one of its own
        left = {g for g in after.dead_groups - b.dead_groups if int(g.rpartition("tempering-")[2]) in b.servers}
        assert left == set(), f"cgroups of dead servers were left behind: {left}"
        assert after.hostname == b.hostname
        r = box.run("print(1)")
        assert (r.status, r.stdout, r.stderr) == ("ok", "1\n", ""), f"the sandbox is not healthy after the test: {r}"


@pytest.fixture
def host(sandbox, host_snapshot):
    """Snapshot of the host taken before the test; call `host.check()` at its end."""
    wait_idle(sandbox)
    return HostGuard(sandbox, host_snapshot)
