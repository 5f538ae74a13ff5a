"""The fork server's record of one pool slot (the process run.SlotProcess becomes), from
fork to reaping, and of the run it does: its pipes, its cgroup, its limits and clocks.

Standard library and sibling modules only: the fork server imports it. Plain classes with
__slots__, not dataclasses: `dataclasses` would pull a dozen modules into the server, and
every module it holds makes each fork slower.
"""

from __future__ import annotations

import os
import signal
import socket
import time

from . import cgroups, notify, protocol, run, syscalls as sc
from .limits import Limits
from .verdict import verdict


class Job:
    """One run a slot was given: what the server needs to watch it and to answer.

    channel     the caller's channel (an fd): the verdict goes there
    deadline    monotonic time at which the run is killed for wall time
    cpu_base    the group's CPU seconds when the current budget started
    compiling   a C/C++ run whose compile step has not yet reported
    reason      why the server ended it: timeout, cpu, killed, output_limit
    """

    __slots__ = ("id", "session", "channel", "limits", "pidfd", "t0", "deadline", "cpu_limit", "cpu_base",
                 "compiling", "reason", "status_lines", "replied", "trail")

    def __init__(self, id: str, session: str | None, channel: int, limits: Limits, pidfd: int, t0: float,
                 deadline: float, cpu_limit: float, cpu_base: float, compiling: bool) -> None:
        self.id, self.session, self.channel, self.limits, self.pidfd = id, session, channel, limits, pidfd
        self.t0, self.deadline, self.cpu_limit, self.cpu_base = t0, deadline, cpu_limit, cpu_base
        self.compiling: bool = compiling
        self.reason: str | None = None
        self.status_lines = bytearray()
        self.replied = False
        self.trail = notify.Trail()
        """What the run tried that the filter stops (the seccomp listener's notes)."""

    def over_limit(self, now: float, cpu_used: float | None) -> str | None:
        """Why the run must end now, if it must: "timeout" (wall) or "cpu"."""
        if now >= self.deadline:
            return "timeout"
        if cpu_used is not None and cpu_used - self.cpu_base > self.cpu_limit:
            return "cpu"
        return None

    def compile_done(self, now: float, cpu_now: float) -> None:
        """The compile step reported: a compile budget of its own ends here and the run's
        own limits start; a shared budget just carries on."""
        self.compiling = False
        if self.limits.compile_wall_s is not None:
            self.deadline = now + self.limits.wall_s
        if self.limits.compile_cpu_s is not None:
            self.cpu_base, self.cpu_limit = cpu_now, self.limits.cpu_s


class Slot:
    """One pool slot, from fork to reaping.

    ctl     control socket: "ready", then the request's header and fds
    st_r    status lines from the sandbox's own code in the slot (set-up errors, compile)
    dn_r    a Python program's exit code, written the moment it is done
    listener  the slot's seccomp listener (notify.py), or -1 on a kernel without one
    job     the run it is doing, once it has one
    """

    __slots__ = ("id", "pid", "ctl", "group", "st_r", "dn_r", "listener", "job")

    def __init__(self, id: str, pid: int, ctl: socket.socket, group: cgroups.JobGroup | None, st_r: int,
                 dn_r: int) -> None:
        self.id, self.pid, self.ctl, self.group, self.st_r, self.dn_r = id, pid, ctl, group, st_r, dn_r
        self.listener = -1
        self.job: Job | None = None

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def cpu(self, version: int) -> float | None:
        """CPU seconds of the slot's whole group, or None without a CPU controller."""
        g = self.group
        if g is None or "cpu" not in g.stat_fds:
            return None
        return cgroups.read_stats({"cpu": g.stat_fds["cpu"]}, version).get("cpu_s")

    def stats(self, version: int) -> dict:
        return cgroups.read_stats(self.group.stat_fds, version) if self.group is not None else {}

    def answer(self, info: dict, version: int) -> None:
        """Send the caller the verdict on its run, from `info` (the slot's status lines and
        exit) and what the server measured itself."""
        job = self.job
        wall = time.monotonic() - job.t0
        stats = self.stats(version)
        if "cpu_s" in stats:
            stats["cpu_s"] -= job.cpu_base
        info.setdefault("rusage_cpu_s", 0.0)
        info.setdefault("maxrss_kb", 0)
        out = verdict(info, job.reason, wall, stats, job.limits, compiling=job.compiling)
        if job.trail.total:
            out["audit"] = job.trail.entries()
        if info["trace"]:
            out["trace"] = {**info["trace"], "exit_seen": time.monotonic()}
        chan = socket.socket(fileno=job.channel)
        protocol.reply(chan, out)
        chan.close()

    def drain_status(self) -> bytes:
        """What is left on the status pipe (call when every writer is gone)."""
        out = b""
        try:
            while chunk := os.read(self.st_r, 65536):
                out += chunk
        except OSError:
            pass
        return out

    def remove_group(self) -> cgroups.JobGroup | None:
        """Close and remove the slot's cgroup; returns it when it could not be removed yet."""
        g = self.group
        if g is None:
            return None
        g.close_fds()
        return None if g.remove() else g


def spawn(slot_id: str, cg: cgroups.Cgroups, prep: run.Prepared, own_pidns: int, defaults: Limits) -> Slot:
    """Fork a new slot, pid 1 of a PID namespace of its own, in a cgroup of its own."""
    group = cg.create(slot_id, defaults.memory_mb, defaults.processes) if cg.available else None
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    st_r, st_w = os.pipe2(os.O_CLOEXEC)
    dn_r, dn_w = os.pipe2(os.O_CLOEXEC)
    pid = -1
    sc.unshare(sc.CLONE_NEWPID)  # the next child is pid 1 of a namespace of its own
    try:
        pid = os.fork()
    finally:
        if pid != 0:
            # Back to our own namespace for children, so no later fork lands in this one.
            sc.setns(own_pidns, sc.CLONE_NEWPID)
    if pid == 0:
        try:
            ours.close()
            join = group.join_fds if group else []
            run.close_fds_except([theirs.fileno(), st_w, dn_w] + join)
            run.SlotProcess(theirs, st_w, dn_w, join, prep).main()
        finally:
            os._exit(70)
    theirs.close()
    os.close(st_w)
    os.close(dn_w)
    if group is not None:
        for fd in group.join_fds:
            os.close(fd)
        group.join_fds = []
    return Slot(slot_id, pid, ours, group, st_r, dn_r)


def start_job(slot: Slot, header: dict, limits: Limits, channel: int, cpu_now: float | None, compiled: bool) -> Job:
    """The record of the run `header` asks for, its clocks started now. A compile step
    with a budget of its own adds it to the run's; a shared one spends the run's."""
    now = time.monotonic()
    return Job(
        id=header["job"], session=header.get("session"), channel=channel, limits=limits,
        pidfd=os.pidfd_open(slot.pid), t0=now, deadline=now + limits.total_wall_s(compiled),
        cpu_limit=limits.cpu_s + ((limits.compile_cpu_s or 0.0) if compiled else 0.0),
        cpu_base=cpu_now or 0.0, compiling=compiled,
    )
