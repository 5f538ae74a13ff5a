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

from . import cgroups, filesystem, languages, protocol, run, snapshots, syscalls as sc
from .verdict import parse_status, verdict

PRELOAD = "collections functools itertools json math re string typing".split()
_ID = re.compile(r"[0-9a-f]{16}")
MAX_SETUP_FAILURES = 3


class Server:
    def __init__(self, control: socket.socket, pool_size: int, defaults: dict) -> None:
        self.control = control
        self.pool_size = pool_size
        self.defaults = defaults
        self.cg = cgroups.Cgroups()
        self.prep = run.Prepared(int(defaults["disk_mb"]))
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.slots: dict[int, dict] = {}  # pid -> slot, from fork to reaping
        self.starting: dict[int, dict] = {}  # ctl fd -> slot, until it says ready
        self.ready: deque[dict] = deque()
        self.pending: deque[tuple[dict, list[int]]] = deque()
        self.by_fd: dict[int, dict] = {}  # pidfd / status fd -> running slot
        self.by_job: dict[str, dict] = {}
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
            for fd, _ in self.poller.poll(timeout):
                if fd == self.control.fileno():
                    if not self._handle_request():
                        self._shutdown()
                        return
                elif fd in self.starting:
                    self._slot_message(fd)
                elif fd in self.by_fd:
                    self._run_event(fd)
            self._reap()

    # -- slots

    def _refill(self) -> None:
        if self.setup_failures >= MAX_SETUP_FAILURES:
            while self.pending:
                header, fds = self.pending.popleft()
                self._fail(fds, f"sandbox slots fail to start: {self.last_setup_error}")
            return
        # Making a slot costs a few ms of CPU. While runs are in flight and a slot is still
        # ready, wait: on a small machine the refill would slow the very runs it serves.
        if self.by_job and self.ready and not self.pending:
            return
        while len(self.ready) + len(self.starting) < self.pool_size + len(self.pending):
            self._spawn_slot()

    def _spawn_slot(self) -> None:
        slot_id = f"s{os.getpid()}-{self.next_slot}"
        self.next_slot += 1
        d = self.defaults
        group = self.cg.create(slot_id, int(d["memory_mb"]), int(d["processes"])) if self.cg.available else None
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
                sc.setns(self.own_pidns, sc.CLONE_NEWPID)
        if pid == 0:
            try:
                ours.close()
                join = group.join_fds if group else []
                run.close_fds_except([theirs.fileno(), st_w, dn_w] + join)
                run.Slot(theirs, st_w, dn_w, join, self.prep).main()
            finally:
                os._exit(70)
        theirs.close()
        os.close(st_w)
        os.close(dn_w)
        if group is not None:
            for fd in group.join_fds:
                os.close(fd)
            group.join_fds = []
        slot = {"id": slot_id, "pid": pid, "ctl": ours, "group": group, "st_r": st_r, "dn_r": dn_r, "job": None}
        self.slots[pid] = slot
        self.starting[ours.fileno()] = slot
        self.poller.register(ours, select.POLLIN)

    def _slot_message(self, fd: int) -> None:
        slot = self.starting.pop(fd)
        self.poller.unregister(fd)
        try:
            msg = slot["ctl"].recv(64)
        except OSError:
            msg = b""
        if msg != b"ready":
            self._retire(slot)
            self._collect_idle(slot, block=True)
            return
        self.setup_failures = 0
        if self.pending:
            header, fds = self.pending.popleft()
            self._assign(slot, header, fds, queued=True)
        else:
            self.ready.append(slot)

    def _retire(self, slot: dict) -> None:
        try:
            os.kill(slot["pid"], signal.SIGKILL)
        except ProcessLookupError:
            pass

    # -- requests

    def _handle_request(self) -> bool:
        try:
            msg, fds, _, _ = socket.recv_fds(self.control, 65536, 4)
        except OSError:
            return False
        if not msg:
            for fd in fds:
                os.close(fd)
            return False
        header = json.loads(msg)
        op = header.get("op")
        channel = socket.socket(fileno=os.dup(fds[0])) if fds else None
        try:
            session = header.get("session")
            if session is not None and not _ID.fullmatch(session):
                raise ValueError(f"bad session id {session!r}")
            if op == "run":
                if len(fds) != 3:
                    raise ValueError("a run needs a channel and two output pipes")
                channel.close()
                channel = None
                if self.ready:
                    self._assign(self.ready.popleft(), header, fds)
                else:
                    self.pending.append((header, fds))
                fds = []
            elif op == "kill":
                slot = self.by_job.get(header["job"])
                if slot is not None:
                    slot["reason"] = slot.get("reason") or header.get("reason", "killed")
                    self._retire(slot)
            elif op == "session_open":
                filesystem.make_session_dir(session, int(header["disk_mb"]), run.HOST_UID)
                _reply(channel, {"ok": True})
            elif op == "session_close":
                filesystem.remove_session_dir(session)
                _reply(channel, {"ok": True})
            elif op in ("snapshot", "restore"):
                self._start_copy(header, channel)
            else:
                _reply(channel, {"error": f"unknown op {op!r}"})
        except Exception as e:  # noqa: BLE001 - every failure goes back to the caller
            _reply(channel, {"error": f"{type(e).__name__}: {e}"})
        if channel is not None:
            channel.close()
        for fd in fds:
            os.close(fd)
        return True

    def _assign(self, slot: dict, header: dict, fds: list[int], queued: bool = False) -> None:
        limits = header["limits"]
        group = slot["group"]
        job = header["job"]
        forwarded = {k: header.get(k) for k in ("session", "language", "limits", "trace", "workdir", "scratch")}
        forwarded["cgroups"] = group is not None
        if header.get("trace"):
            forwarded["assigned"] = time.monotonic()
        try:
            if group is not None:
                group.set_limits(int(limits["memory_mb"]), int(limits["processes"]))
            socket.send_fds(slot["ctl"], [json.dumps(forwarded).encode()], fds[:3])
        except OSError as e:
            self._fail(fds, f"could not start the run: {e}")
            self._retire(slot)
            return
        slot["ctl"].close()
        os.close(fds[1])
        os.close(fds[2])
        if queued:  # the caller's clock for this run starts now, not when it was queued
            try:
                protocol.send_fd(fds[0], {"assigned": True})
            except OSError:
                pass
        compiled = header.get("language") in languages.COMPILED
        now = time.monotonic()
        slot.update(
            job=job,
            session=header.get("session"),
            channel=fds[0],
            limits=limits,
            compiled=compiled,
            t0=now,
            deadline=now + float(limits["wall_s"]) + (float(limits["compile_wall_s"]) if compiled else 0.0),
            cpu_limit=float(limits["cpu_s"]) + (float(limits["compile_cpu_s"]) if compiled else 0.0),
            cpu_base=self._cpu(slot) or 0.0,
            reason=None,
            status_lines=bytearray(),
        )
        slot["pidfd"] = os.pidfd_open(slot["pid"])
        for fd in (slot["pidfd"], slot["st_r"], slot["dn_r"]):
            self.by_fd[fd] = slot
            self.poller.register(fd, select.POLLIN)
        self.by_job[job] = slot

    def _fail(self, fds: list[int], detail: str) -> None:
        chan = socket.socket(fileno=fds[0])
        _reply(chan, {"status": "sandbox_error", "detail": detail})
        chan.close()
        for fd in fds[1:]:
            os.close(fd)

    # -- watching runs

    def _stats(self, slot: dict) -> dict:
        group = slot["group"]
        return cgroups.read_stats(group.stat_fds, self.cg.version) if group is not None else {}

    def _cpu(self, slot: dict) -> float | None:
        group = slot["group"]
        if group is None or "cpu" not in group.stat_fds:
            return None
        return cgroups.read_stats({"cpu": group.stat_fds["cpu"]}, self.cg.version).get("cpu_s")

    def _check_limits(self) -> int | None:
        """Kill runs past their wall or CPU time; return how long the loop may sleep (ms)."""
        now = time.monotonic()
        nearest = None
        for slot in list(self.by_job.values()):
            if slot.get("reason"):
                continue
            if now >= slot["deadline"]:
                slot["reason"] = "timeout"
                self._retire(slot)
                continue
            used = self._cpu(slot)
            if used is not None and used - slot["cpu_base"] > slot["cpu_limit"]:
                slot["reason"] = "cpu"
                self._retire(slot)
                continue
            wait = min(slot["deadline"] - now, 0.05 if used is not None else 3600)
            nearest = wait if nearest is None else min(nearest, wait)
        if self.leftover_groups:
            nearest = 0.5 if nearest is None else min(nearest, 0.5)
        return None if nearest is None else max(1, int(nearest * 1000) + 1)

    def _run_event(self, fd: int) -> None:
        slot = self.by_fd[fd]
        if fd == slot["dn_r"]:
            self._early_exit(slot)
            return
        if fd == slot["st_r"]:
            chunk = os.read(fd, 65536)
            if not chunk:
                self.poller.unregister(fd)
                del self.by_fd[fd]
                return
            slot["status_lines"] += chunk
            if slot["compiled"] and b'"compile"' in chunk:
                # the run's own limits start once the compile step is over
                slot["deadline"] = time.monotonic() + float(slot["limits"]["wall_s"])
                slot["cpu_base"] = self._cpu(slot) or 0.0
                slot["cpu_limit"] = float(slot["limits"]["cpu_s"])
            return
        self._finish(slot)

    def _early_exit(self, slot: dict) -> None:
        """A Python program reports its exit code the moment it is done and has closed its
        output, so the caller need not wait while the kernel tears down its address space.
        The report can't add power: the program chooses its exit code anyway, and it is
        killed on the spot. Status, time and memory still come from the server's own view."""
        fd = slot["dn_r"]
        raw = os.read(fd, 64)
        self.poller.unregister(fd)
        del self.by_fd[fd]
        if slot.get("reason") or not raw.strip().lstrip(b"-").isdigit():
            return
        # Answer early only when nothing of the run can act after the answer: no session
        # workspace that outlives it, and no process in its group but pid 1 (which dies now).
        # Otherwise the answer waits for the kernel to end the whole namespace.
        group = slot["group"]
        alone = group is not None and cgroups.members(group.stat_fds) == [slot["pid"]]
        if slot["session"] or not alone:
            return
        self._retire(slot)
        info = parse_status(slot["status_lines"])
        info["exit_code"] = int(raw.strip()) & 0xFF
        self._reply_verdict(slot, info, {"ru_utime": 0.0, "ru_maxrss": 0})
        slot["replied"] = True

    def _reply_verdict(self, slot: dict, info: dict, usage) -> None:
        wall = time.monotonic() - slot["t0"]
        stats = self._stats(slot)
        if "cpu_s" in stats:
            stats["cpu_s"] -= slot["cpu_base"]
        info.setdefault("rusage_cpu_s", 0.0)
        info.setdefault("maxrss_kb", 0)
        out = verdict(info, slot["reason"], wall, stats, slot["limits"])
        if info["trace"]:
            out["trace"] = {**info["trace"], "exit_seen": time.monotonic()}
        chan = socket.socket(fileno=slot["channel"])
        _reply(chan, out)
        chan.close()

    def _finish(self, slot: dict) -> None:
        _, status, usage = os.wait4(slot["pid"], 0)
        self.slots.pop(slot["pid"], None)
        for fd in (slot["pidfd"], slot["st_r"], slot["dn_r"]):
            if fd in self.by_fd:
                self.poller.unregister(fd)
                del self.by_fd[fd]
        try:
            while chunk := os.read(slot["st_r"], 65536):  # every writer is gone now
                slot["status_lines"] += chunk
        except OSError:
            pass
        for fd in (slot["pidfd"], slot["st_r"], slot["dn_r"]):
            os.close(fd)
        self.by_job.pop(slot["job"], None)
        if not slot.get("replied"):
            info = parse_status(slot["status_lines"])
            if os.WIFSIGNALED(status):
                info["signal"] = os.WTERMSIG(status)
            else:
                info["exit_code"] = os.WEXITSTATUS(status)
            info["rusage_cpu_s"] = usage.ru_utime + usage.ru_stime
            info["maxrss_kb"] = usage.ru_maxrss
            self._reply_verdict(slot, info, usage)
        self._remove_group(slot)

    def _remove_group(self, slot: dict) -> None:
        group = slot["group"]
        if group is not None:
            group.close_fds()
            if not group.remove():
                self.leftover_groups.append(group)

    # -- sessions

    def _start_copy(self, header: dict, channel: socket.socket) -> None:
        self.helpers.add(snapshots.start_copy(header["op"], header["session"], int(header["index"]), channel))

    # -- children

    def _reap(self) -> None:
        for pid in list(self.helpers):
            if os.waitpid(pid, os.WNOHANG)[0]:
                self.helpers.discard(pid)
        for pid, slot in list(self.slots.items()):
            if slot.get("pidfd") is None:  # a running slot is collected by _finish
                self._collect_idle(slot, block=False)
        self.leftover_groups = [g for g in self.leftover_groups if not g.remove()]

    def _collect_idle(self, slot: dict, block: bool) -> None:
        """Clean up after a slot that died (or was retired) before it got a run."""
        try:
            done, _ = os.waitpid(slot["pid"], 0 if block else os.WNOHANG)
        except ChildProcessError:
            done = slot["pid"]
        if not done:
            return
        self.slots.pop(slot["pid"], None)
        fd = slot["ctl"].fileno()
        if fd in self.starting:
            self.starting.pop(fd)
            self.poller.unregister(fd)
        if slot in self.ready:
            self.ready.remove(slot)
        slot["ctl"].close()
        lines = b""
        try:
            while chunk := os.read(slot["st_r"], 65536):
                lines += chunk
        except OSError:
            pass
        os.close(slot["st_r"])
        os.close(slot["dn_r"])
        err = parse_status(lines).get("setup_error")
        if err:
            self.setup_failures += 1
            self.last_setup_error = err
        self._remove_group(slot)

    def _shutdown(self) -> None:
        for header, fds in self.pending:
            for fd in fds:
                os.close(fd)
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


def _reply(channel: socket.socket | None, obj: dict) -> None:
    if channel is None:
        return
    try:
        protocol.send(channel, obj)
    except OSError:
        pass


def main() -> None:
    """Entry point: `python3 -I -S -B -c BOOT ROOT FD POOL DEFAULT_LIMITS_JSON [PYLIB_DIR]`."""
    # No parent-death signal here: it fires when the *thread* that started us exits.
    # The caller's death closes the control socket instead, and the loop ends on EOF.
    control = socket.socket(fileno=int(sys.argv[2]))
    pool_size, defaults = int(sys.argv[3]), json.loads(sys.argv[4])
    pylib = sys.argv[5] if len(sys.argv) > 5 and sys.argv[5] else None
    try:
        run._write_file("/proc/self/oom_score_adj", "-1000")
    except OSError:
        pass
    try:
        for name in PRELOAD:
            __import__(name)
        sc.unshare(sc.CLONE_NEWNS)
        server = Server(control, pool_size, defaults)
        filesystem.build_root(pylib=pylib)
        # What every run sees, set once here so slots inherit it instead of each redoing it.
        sys.path[:] = (["/workspace"] + [p for p in sys.path if p.startswith("/usr/lib/python3")]
                       + ([filesystem.PYLIB] if pylib else []))
        os.environ.clear()
        os.environ.update(run.run_environment())
        if pylib:  # a python3 started from bash (terminal tasks) finds the sandbox library too
            os.environ["PYTHONPATH"] = filesystem.PYLIB
        problem = server.first_slot_ready()
    except Exception as e:  # noqa: BLE001
        problem = f"{type(e).__name__}: {e}"
    if problem:
        control.sendall(json.dumps({"error": problem}).encode())
        return
    control.sendall(json.dumps({"ready": True, "features": server.features()}).encode())
    server.serve()
