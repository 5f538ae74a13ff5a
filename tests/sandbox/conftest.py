"""Fixtures for the sandbox tests: a started sandbox, host canaries and secrets, and a
view of the host (processes, mounts, cgroups, files) to prove a hostile run left it as
it was and the sandbox still works.

    def test_x(sandbox, host):
        r = sandbox.run(...)
        ...                       # containment and status asserts
        host.check()              # host unchanged, nothing left behind, sandbox healthy
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tempering.errors import SandboxUnavailable
from tempering.sandbox import Limits, Sandbox

from hostcheck import (  # noqa: E402 - tests/sandbox is on sys.path, as for hostile.py
    NOBODY, _owned_by_nobody, _sha, cgroup_dirs, dead_server_groups,
    descendants, foreign_nobody, is_fork_server, lasting_foreign, plant_nobody, processes,
)

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
