"""The fork server: one warm, already-confined interpreter that keeps a pool of
ready-to-run slots (see run.py), hands each request to one and watches it.

It runs as host root in its own mount namespace, pivoted into the sandbox root, so the
host file system is out of reach of everything it forks. It never reads a run's code,
input, files or output: the caller writes the request to the slot over a socket the
server only forwards, and reads the output from pipes it made itself. So no run can find
another run's data in memory inherited from the server. What the server does see: the
limits, the exit status, resource usage, and its own status lines from the slot.
"""

from __future__ import annotations

import gc
import json
import os
import re
import select
import signal
import socket
import sys
import time
from collections import deque

from . import cgroups, filesystem, languages, notify, protocol, run, snapshots, syscalls as sc
from .limits import Limits
from .slot import Slot, spawn, start_job
from .verdict import parse_status

PRELOAD = "collections functools itertools json math re string typing".split()
_ID = re.compile(r"[0-9a-f]{16}")
MAX_SETUP_FAILURES = 3


class Server:
    def __init__(self, control: socket.socket, pool_size: int, defaults: Limits) -> None:
        self.control = control
        self.pool_size = pool_size
        self.defaults = defaults
        self.cg = cgroups.Cgroups()
        self.prep = run.Prepared(defaults.disk_mb)
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.slots: dict[int, Slot] = {}  # pid -> slot, from fork to reaping
        self.starting: dict[int, Slot] = {}  # ctl fd -> slot, until it says ready
        self.ready: deque[Slot] = deque()
        self.pending: deque[tuple[dict, Limits, list[int]]] = deque()  # runs waiting for a slot
        self.by_fd: dict[int, Slot] = {}  # pidfd / status fd -> running slot
        self.by_job: dict[str, Slot] = {}
        self.helpers: set[int] = set()
        self.leftover_groups: list[cgroups.JobGroup] = []
        self.setup_failures = 0
        self.last_setup_error = ""
        self.next_slot = 0
        self.poller = select.poll()

    def features(self) -> dict:
        return {
            "cgroups": self.cg.version,
            "cgroup_problem": self.cg.problem,
            "seccomp": True,
            "seccomp_audit": self.prep.notify,
            "pool_size": self.pool_size,
            "python": sys.version.split()[0],
        }

    # -- the loop

    def first_slot_ready(self, timeout: float = 20.0) -> str:
        """Make one slot and wait for it: proves this machine can isolate a run."""
        self._spawn_slot()
        deadline = time.monotonic() + timeout
        while self.starting and time.monotonic() < deadline:
            for fd, _ in self.poller.poll(100):
                if fd in self.starting:
                    self._slot_message(fd)
            self._reap()
        if self.ready:
            return ""
        return self.last_setup_error or "the first sandbox slot did not become ready"

    def serve(self) -> None:
        self.poller.register(self.control, select.POLLIN)
        gc.freeze()  # keep the collector from touching (and so copying) inherited pages
        while True:
            self._refill()
            timeout = self._check_limits()
            for fd, events in self.poller.poll(timeout):
                if fd == self.control.fileno():
                    if not self._handle_request():
                        self._shutdown()
                        return
                elif fd in self.starting:
                    self._slot_message(fd)
                elif fd in self.by_fd:
                    self._run_event(fd, events)
            self._reap()

    # -- slots

    def _refill(self) -> None:
        if self.setup_failures >= MAX_SETUP_FAILURES:
            while self.pending:
                _, _, fds = self.pending.popleft()
                self._fail(fds, f"sandbox slots fail to start: {self.last_setup_error}")
            return
        # Making a slot costs a few ms of CPU. While runs are in flight and a slot is still
        # ready, wait: on a small machine the refill would slow the very runs it serves.
        if self.by_job and self.ready and not self.pending:
            return
        while len(self.ready) + len(self.starting) < self.pool_size + len(self.pending):
            self._spawn_slot()

    def _spawn_slot(self) -> None:
        slot = spawn(f"s{os.getpid()}-{self.next_slot}", self.cg, self.prep, self.own_pidns, self.defaults)
        self.next_slot += 1
        self.slots[slot.pid] = slot
        self.starting[slot.ctl.fileno()] = slot
        self.poller.register(slot.ctl, select.POLLIN)

    def _slot_message(self, fd: int) -> None:
        slot = self.starting.pop(fd)
        self.poller.unregister(fd)
        try:
            msg, fds, _, _ = socket.recv_fds(slot.ctl, 64, 1)
        except OSError:
            msg, fds = b"", []
        if fds:
            slot.listener = fds[0]
        if msg != b"ready":
            slot.kill()
            self._collect_idle(slot, block=True)
            return
        self.setup_failures = 0
        if self.pending:
            header, limits, fds = self.pending.popleft()
            self._assign(slot, header, limits, fds, queued=True)
        else:
            self.ready.append(slot)

    # -- requests

    def _handle_request(self) -> bool:
        try:
            msg, fds, _, _ = socket.recv_fds(self.control, 65536, 4)
        except OSError:
            return False
        if not msg:
            _close_all(fds)
            return False
        header = json.loads(msg)
        channel = socket.socket(fileno=os.dup(fds[0])) if fds else None
        try:
            fds = self._dispatch(header, fds, channel)
        except Exception as e:  # noqa: BLE001 - every failure goes back to the caller
            error = f"{type(e).__name__}: {e}"
            protocol.reply(channel, {"error": error, "status": "sandbox_error", "detail": error})
        if channel is not None:
            channel.close()
        _close_all(fds)
        return True

    def _dispatch(self, header: dict, fds: list[int], channel: socket.socket | None) -> list[int]:
        """Carry out one request; returns the fds that are still ours to close."""
        op, session = header.get("op"), header.get("session")
        if session is not None and not _ID.fullmatch(session):
            raise ValueError(f"bad session id {session!r}")
        if op == "run":
            if len(fds) != 3:
                raise ValueError("a run needs a channel and two output pipes")
            limits = Limits.from_dict(header["limits"])  # the one place a request's limits are read
            if self.ready:
                self._assign(self.ready.popleft(), header, limits, fds)
            else:
                self.pending.append((header, limits, fds))
            return []
        if op == "kill":
            slot = self.by_job.get(header["job"])
            if slot is not None and slot.job is not None:
                slot.job.reason = slot.job.reason or header.get("reason", "killed")
                slot.kill()
        elif op == "session_open":
            filesystem.make_session_dir(session, int(header["disk_mb"]), run.HOST_UID)
            protocol.reply(channel, {"ok": True})
        elif op == "session_close":
            filesystem.remove_session_dir(session)
            protocol.reply(channel, {"ok": True})
        elif op in ("snapshot", "restore"):
            self.helpers.add(snapshots.start_copy(op, session, int(header["index"]), channel))
        else:
            protocol.reply(channel, {"error": f"unknown op {op!r}"})
        return fds

    def _assign(self, slot: Slot, header: dict, limits: Limits, fds: list[int], queued: bool = False) -> None:
        group = slot.group
        forwarded = {k: header.get(k) for k in ("session", "language", "trace", "workdir", "scratch")}
        forwarded.update(limits=limits.as_dict(), cgroups=group is not None)
        if header.get("trace"):
            forwarded["assigned"] = time.monotonic()
        try:
            if group is not None:
                group.set_limits(limits.memory_mb, limits.processes)
            socket.send_fds(slot.ctl, [json.dumps(forwarded).encode()], fds[:3])
        except OSError as e:
            self._fail(fds, f"could not start the run: {e}")
            slot.kill()
            return
        slot.ctl.close()
        os.close(fds[1])
        os.close(fds[2])
        if queued:  # the caller's clock for this run starts now, not when it was queued
            try:
                protocol.send_fd(fds[0], {"assigned": True})
            except OSError:
                pass
        compiled = header.get("language") in languages.COMPILED
        slot.job = job = start_job(slot, header, limits, fds[0], slot.cpu(self.cg.version), compiled)
        for fd in (job.pidfd, slot.st_r, slot.dn_r) + ((slot.listener,) if slot.listener >= 0 else ()):
            self.by_fd[fd] = slot
            self.poller.register(fd, select.POLLIN)
        self.by_job[job.id] = slot

    def _fail(self, fds: list[int], detail: str) -> None:
        chan = socket.socket(fileno=fds[0])
        protocol.reply(chan, {"status": "sandbox_error", "detail": detail})
        chan.close()
        _close_all(fds[1:])

    # -- watching runs

    def _check_limits(self) -> int | None:
        """Kill runs past their wall or CPU time; return how long the loop may sleep (ms)."""
        now = time.monotonic()
        nearest = None
        for slot in list(self.by_job.values()):
            job = slot.job
            if job.reason:
                continue
            used = slot.cpu(self.cg.version) if now < job.deadline else None
            job.reason = job.over_limit(now, used)
            if job.reason:
                slot.kill()
                continue
            wait = min(job.deadline - now, 0.05 if used is not None else 3600)
            nearest = wait if nearest is None else min(nearest, wait)
        if self.leftover_groups:
            nearest = 0.5 if nearest is None else min(nearest, 0.5)
        return None if nearest is None else max(1, int(nearest * 1000) + 1)

    def _run_event(self, fd: int, events: int = select.POLLIN) -> None:
        slot = self.by_fd[fd]
        job = slot.job
        if fd == slot.listener:
            # A call parked by the filter (notify.py): answer it now, the program waits.
            done = lambda: self._setup_done(slot)  # noqa: E731
            if not (events & select.POLLIN and notify.answer_one(fd, job.trail, done)) and events & select.POLLHUP:
                self.poller.unregister(fd)  # every process under the filter is gone
                del self.by_fd[fd]
            return
        if fd == slot.dn_r:
            self._early_exit(slot)
            return
        if fd == slot.st_r:
            chunk = os.read(fd, 65536)
            if not chunk:
                self.poller.unregister(fd)
                del self.by_fd[fd]
                return
            self._status(slot, chunk)
            return
        self._finish(slot)

    def _status(self, slot: Slot, chunk: bytes) -> None:
        job = slot.job
        job.status_lines += chunk
        if job.compiling and b'"compile"' in chunk:
            job.compile_done(time.monotonic(), slot.cpu(self.cg.version) or 0.0)

    def _setup_done(self, slot: Slot) -> bool:
        """Whether the slot has reported its own mounts made (run.SETUP_DONE). It writes that
        line before the code runs, so by the time the code's mount call is parked the line
        is in the pipe: read what is there without waiting."""
        job, marker = slot.job, f'"{run.SETUP_DONE}"'.encode()
        while marker not in job.status_lines:
            if slot.st_r not in self.by_fd or not select.select([slot.st_r], [], [], 0)[0]:
                return False
            chunk = os.read(slot.st_r, 65536)
            if not chunk:
                return False
            self._status(slot, chunk)
        return True

    def _early_exit(self, slot: Slot) -> None:
        """A Python program reports its exit code the moment it is done and has closed its
        output, so the caller need not wait while the kernel tears down its address space.
        The report can't add power: the program chooses its exit code anyway, and it is
        killed on the spot. Status, time and memory still come from the server's own view."""
        fd, job = slot.dn_r, slot.job
        raw = os.read(fd, 64)
        self.poller.unregister(fd)
        del self.by_fd[fd]
        if job.reason or not raw.strip().lstrip(b"-").isdigit():
            return
        # Answer early only when nothing of the run can act after the answer: no session
        # workspace that outlives it, and no process in its group but pid 1 (which dies now).
        # Otherwise the answer waits for the kernel to end the whole namespace.
        group = slot.group
        alone = group is not None and cgroups.members(group.stat_fds) == [slot.pid]
        if job.session or not alone:
            return
        slot.kill()
        info = parse_status(job.status_lines)
        info["exit_code"] = int(raw.strip()) & 0xFF
        slot.answer(info, self.cg.version)
        job.replied = True

    def _finish(self, slot: Slot) -> None:
        job = slot.job
        _, status, usage = os.wait4(slot.pid, 0)
        self.slots.pop(slot.pid, None)
        fds = (job.pidfd, slot.st_r, slot.dn_r) + ((slot.listener,) if slot.listener >= 0 else ())
        for fd in fds:
            if fd in self.by_fd:
                self.poller.unregister(fd)
                del self.by_fd[fd]
        job.status_lines += slot.drain_status()  # every writer is gone now
        _close_all(fds)
        slot.listener = -1
        self.by_job.pop(job.id, None)
        if not job.replied:
            info = parse_status(job.status_lines)
            if os.WIFSIGNALED(status):
                info["signal"] = os.WTERMSIG(status)
            else:
                info["exit_code"] = os.WEXITSTATUS(status)
            info["rusage_cpu_s"] = usage.ru_utime + usage.ru_stime
            info["maxrss_kb"] = usage.ru_maxrss
            slot.answer(info, self.cg.version)
        self._remove_group(slot)

    def _remove_group(self, slot: Slot) -> None:
        left = slot.remove_group()
        if left is not None:
            self.leftover_groups.append(left)

    # -- children

    def _reap(self) -> None:
        for pid in list(self.helpers):
            if os.waitpid(pid, os.WNOHANG)[0]:
                self.helpers.discard(pid)
        for slot in list(self.slots.values()):
            if slot.job is None:  # a running slot is collected by _finish
                self._collect_idle(slot, block=False)
        self.leftover_groups = [g for g in self.leftover_groups if not g.remove()]

    def _collect_idle(self, slot: Slot, block: bool) -> None:
        """Clean up after a slot that died (or was retired) before it got a run."""
        try:
            done, _ = os.waitpid(slot.pid, 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = slot.pid
        if not done:
            return
        self.slots.pop(slot.pid, None)
        fd = slot.ctl.fileno()
        if fd in self.starting:
            self.starting.pop(fd)
            self.poller.unregister(fd)
        if slot in self.ready:
            self.ready.remove(slot)
        slot.ctl.close()
        lines = slot.drain_status()
        _close_all([slot.st_r, slot.dn_r] + ([slot.listener] if slot.listener >= 0 else []))
        slot.listener = -1
        err = parse_status(lines).get("setup_error")
        if err:
            self.setup_failures += 1
            self.last_setup_error = err
        self._remove_group(slot)

    def _shutdown(self) -> None:
        for _, _, fds in self.pending:
            _close_all(fds)
        for pid in list(self.slots) + list(self.helpers):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for slot in list(self.by_job.values()):
            self._finish(slot)
        while (self.slots or self.helpers or self.leftover_groups) and time.monotonic() < deadline:
            self._reap()
            time.sleep(0.005)
        self.cg.close()


def _close_all(fds) -> None:
    for fd in fds:
        os.close(fd)


def main() -> None:
    """Entry point: `python3 -I -S -B -c BOOT ROOT FD POOL DEFAULT_LIMITS_JSON [PYLIB_DIR]`."""
    # No parent-death signal here: it fires when the *thread* that started us exits.
    # The caller's death closes the control socket instead, and the loop ends on EOF.
    control = socket.socket(fileno=int(sys.argv[2]))
    pool_size = int(sys.argv[3])
    pylib = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
    try:
        run._write_file("/proc/self/oom_score_adj", "-1000")
    except OSError:
        pass
    try:
        for name in PRELOAD:
            __import__(name)
        sc.unshare(sc.CLONE_NEWNS)
        server = Server(control, pool_size, Limits.from_dict(json.loads(sys.argv[4])))
        filesystem.build_root(pylib=pylib)
        run.set_run_view(pylib is not None)  # once here, so slots inherit it
        problem = server.first_slot_ready()
    except Exception as e:  # noqa: BLE001
        problem = f"{type(e).__name__}: {e}"
    if problem:
        control.sendall(json.dumps({"error": problem}).encode())
        return
    control.sendall(json.dumps({"ready": True, "features": server.features()}).encode())
    server.serve()
