"""The sandbox's audit trail: every run that hit a limit, was killed, failed as a sandbox,
tried a call the seccomp filter denies or tried to reach the network, tagged with the
episode it ran for.

    with audit.tagged(slot):          # the rollout backend, around one episode's env calls
        env.verify(task, reply)       # every Sandbox run inside is noted if it is an incident
    audit.LOG.take(slot)              # the collector, when the episode is stored

Incidents are what the sandbox itself can see, from outside the sandboxed process, so the
program cannot hide them:
    timeout, memory, output_limit, killed, sandbox_error    the fork server's verdict
    denied_syscall    a call the filter refuses (ptrace, bpf, unshare, socket(AF_PACKET),
                      clone with namespace flags, ioctl(TIOCSTI) ...), from the fork
                      server's seccomp listener (notify.py), with how many times
    network           a connect(2) to an address outside the sandbox's loopback
    write_outside     a call that writes a path (open for writing, creat, mkdir, unlink,
                      rename, link, chmod, ...) aimed outside /workspace, /tmp, /dev/shm
                      and the task dirs; the read-only mounts refuse it
Runs in Ray sandbox workers are noted in those processes under the same tags, and travel
back with each answer or episode (scheduler/ray_backend.py), into this process's log.
"""

from __future__ import annotations

import contextvars
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

INCIDENTS = ("timeout", "memory", "output_limit", "killed", "sandbox_error")
ATTEMPTS = ("denied_syscall", "network", "write_outside")
"""Kinds of ExecResult.audit entries: what a run tried, whatever its status."""

_episode: contextvars.ContextVar = contextvars.ContextVar("tempering_sandbox_episode", default=None)


@dataclass(frozen=True)
class Incident:
    status: str
    detail: str
    language: str | None
    wall_s: float
    at: float


class AuditLog:
    """Incidents of this process, by the episode tag they ran under."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.by_tag: dict = {}

    def note(self, status: str, detail: str, language: str | None, wall_s: float, attempts=()) -> None:
        """Keep the incidents of a tagged run (untagged runs, e.g. evaluation, are not kept):
        its status when it is one, and each of its `attempts` (ExecResult.audit entries)."""
        tag = _episode.get()
        if tag is None:
            return
        now = time.time()
        found = [Incident(status, detail, language, wall_s, now)] if status in INCIDENTS else []
        for a in attempts:
            if a.get("kind") in ATTEMPTS:
                count = int(a.get("count", 1))
                found.append(Incident(a["kind"], a["detail"] + (f" (x{count})" if count > 1 else ""), language,
                                      wall_s, now))
        if found:
            with self.lock:
                self.by_tag.setdefault(tag, []).extend(found)

    def put(self, tag, incidents: list[Incident]) -> None:
        """Add incidents noted elsewhere (a Ray sandbox worker's) under `tag`."""
        if incidents and tag is not None:
            with self.lock:
                self.by_tag.setdefault(tag, []).extend(incidents)

    def take(self, tag) -> list[Incident]:
        """The incidents of one tag, removed from the log."""
        with self.lock:
            return self.by_tag.pop(tag, [])


LOG = AuditLog()


@contextmanager
def tagged(tag):
    """Runs inside are noted under `tag` (in this thread; a thread pool tags each call itself)."""
    token = _episode.set(tag)
    try:
        yield
    finally:
        _episode.reset(token)
