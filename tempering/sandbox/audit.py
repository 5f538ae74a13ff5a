"""The sandbox's audit trail: every run that hit a limit, was killed, or failed as a sandbox,
tagged with the episode it ran for.

    with audit.tagged(slot):          # the rollout backend, around one episode's env calls
        env.verify(task, reply)       # every Sandbox run inside is noted if it is an incident
    audit.LOG.take(slot)              # the collector, when the episode is stored

Incidents are what the sandbox itself can see: a status of timeout, memory, output_limit,
killed or sandbox_error (the fork server's verdict, from outside the sandboxed process, so
the program cannot hide it). Not recorded: calls the seccomp filter refused (they return
EPERM and leave no trace), network attempts (the namespace has no interfaces) and writes
outside the workspace (read-only mounts refuse them). Runs in Ray sandbox workers are noted
in those processes and not collected.
"""

from __future__ import annotations

import contextvars
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass

INCIDENTS = ("timeout", "memory", "output_limit", "killed", "sandbox_error")

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

    def note(self, status: str, detail: str, language: str | None, wall_s: float) -> None:
        """Keep an incident of a tagged run (untagged runs, e.g. evaluation, are not kept)."""
        tag = _episode.get()
        if status not in INCIDENTS or tag is None:
            return
        with self.lock:
            self.by_tag.setdefault(tag, []).append(Incident(status, detail, language, wall_s, time.time()))

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
