"""One run's process, from a pool slot to the code.

The fork server makes each slot ahead of time, off the latency path. A slot is one
process, pid 1 of a PID namespace of its own:

    before a request   joins its cgroups; mounts a /proc of its PID namespace; drops to
                       an unprivileged host uid; makes new user, mount, network, IPC, UTS
                       and cgroup namespaces; mounts a fresh tmpfs for /workspace, /tmp and
                       /dev/shm; hides the sessions tree; empties its bounding set
    on a request       reads the code straight from the caller (the server never sees
                       it); the session's workspace or other sizes; then no capabilities,
                       no_new_privs, seccomp, rlimits, a clean environment, and the code.
                       Python runs in this very, already-warm interpreter.

When it exits the kernel kills everything left in its PID namespace, and the server,
its parent, collects the exit status. Like a container without --init, the program is
pid 1: a signal it sends itself without installing a handler is ignored.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import socket
import sys
import time

# Everything a run's own code path needs is imported here, in the server, before any run:
# a run's sys.path starts with its workspace, so a late import could load a planted module.
from . import cgroups, filesystem, languages, paths, protocol, seccomp, syscalls as sc
from .limits import Limits

HOST_UID = 65534  # the unprivileged host identity of every sandboxed process ("nobody")
SETUP_DONE = "setup_done"
"""The status line a slot writes when its own mounts are made, before confine and the code."""
RUN_PATH = "/usr/bin:/bin"


def run_environment() -> dict[str, str]:
    """The whole environment a run sees; nothing of the caller's."""
    return {
        "PATH": RUN_PATH,
        "HOME": "/workspace",
        "USER": "sandbox",
        "LOGNAME": "sandbox",
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TMPDIR": "/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONIOENCODING": "utf-8",
        # numpy in the sandbox library (PYLIB): one BLAS thread, not one per host core
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
    }


def set_run_view(pylib: bool) -> None:
    """What every run's interpreter sees, set in the fork server after it pivots into the
    sandbox root: the import path (workspace, system library, the sandbox library at
    filesystem.PYLIB when there is one) and exactly the run's environment."""
    sys.path[:] = (["/workspace"] + [p for p in sys.path if p.startswith("/usr/lib/python3")]
                   + ([filesystem.PYLIB] if pylib else []))
    os.environ.clear()
    os.environ.update(run_environment())
    if pylib:  # a python3 started from bash (terminal tasks) finds the sandbox library too
        os.environ["PYTHONPATH"] = filesystem.PYLIB


class Prepared:
    """What the server builds once and every slot inherits."""

    def __init__(self, default_disk_mb: int) -> None:
        self.notify = seccomp.notify_supported()  # denied calls and connects reach the audit log
        self.seccomp_program = seccomp.Filter(seccomp.compiled(notify=self.notify))
        self.seccomp_mounts = seccomp.Filter(seccomp.compiled(mounts_only=True))
        with open("/proc/sys/kernel/cap_last_cap") as f:
            self.cap_last = int(f.read())
        self.default_disk_mb = default_disk_mb


def drop_to_host_uid() -> None:
    os.setgroups([])
    os.setresgid(HOST_UID, HOST_UID, HOST_UID)
    os.setresuid(HOST_UID, HOST_UID, HOST_UID)


def close_fds_except(keep: list[int]) -> None:
    lo = 3
    for fd in sorted(set(k for k in keep if k > 2)):
        os.closerange(lo, fd)
        lo = fd + 1
    os.closerange(lo, resource.getrlimit(resource.RLIMIT_NOFILE)[0])


class SlotProcess:
    """The slot process (see the module docstring); the server's record of it is slot.Slot."""

    def __init__(self, ctl: socket.socket, st_w: int, done_w: int, join_fds: list[int], prep: Prepared) -> None:
        self.ctl, self.st_w, self.done_w, self.join_fds, self.prep = ctl, st_w, done_w, join_fds, prep
        self.listener: int | None = None

    def prepare(self) -> None:
        sc.set_parent_death_signal(signal.SIGKILL)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM):
            signal.signal(sig, signal.SIG_DFL)
        cgroups.join(self.join_fds)
        for fd in self.join_fds:
            os.close(fd)
        # A /proc for this PID namespace, mounted while still host root. The user
        # namespace made below may not mount one itself, but needs one to be visible.
        sc.unshare(sc.CLONE_NEWNS)
        sc.mount("proc", "/proc", "proc", sc.MS_NOSUID | sc.MS_NODEV | sc.MS_NOEXEC)
        drop_to_host_uid()
        sc.prctl(sc.PR_SET_DUMPABLE, 1)  # so we may write our own uid_map after the uid change
        sc.unshare(
            sc.CLONE_NEWUSER | sc.CLONE_NEWNS | sc.CLONE_NEWIPC | sc.CLONE_NEWUTS | sc.CLONE_NEWNET | sc.CLONE_NEWCGROUP
        )
        uid = filesystem.SANDBOX_UID
        _write_file("/proc/self/uid_map", f"{uid} {HOST_UID} 1\n")
        _write_file("/proc/self/setgroups", "deny")
        _write_file("/proc/self/gid_map", f"{uid} {HOST_UID} 1\n")
        filesystem.enter_run(self.prep.default_disk_mb)
        # The bounding set is left alone: emptying it costs 41 credential commits per run
        # (a few percent of all CPU), and it only bounds what exec could grant, which
        # no_new_privs, a non-root uid and empty inheritable/ambient sets already make nothing.
        os.setsid()
        # Everything that does not depend on the request happens now, off the latency path:
        # the main seccomp filter (mounting stays allowed until the run's mounts are made).
        _write_file("/proc/self/oom_score_adj", "1000")  # the program dies first, never its keepers
        sc.set_no_new_privs()
        self.listener = self.prep.seccomp_program.install(listener=self.prep.notify)

    def main(self) -> None:
        try:
            self.prepare()
        except BaseException as e:  # noqa: BLE001
            _send_line(self.st_w, {"setup_error": f"slot set-up: {type(e).__name__}: {e}"})
            os._exit(71)
        # The listener goes to the server and leaves this process: whoever holds it answers
        # the filter's parked calls, and the code must never be able to answer its own.
        socket.send_fds(self.ctl, [b"ready"], [self.listener] if self.listener is not None else [])
        if self.listener is not None:
            os.close(self.listener)
            self.listener = None
        msg, fds, _, _ = socket.recv_fds(self.ctl, 65536, 3)
        if not msg or len(fds) != 3:
            os._exit(0)  # retired without a run
        self.ctl.close()
        header = json.loads(msg)
        header["received"] = time.monotonic()
        channel, out_w, err_w = socket.socket(fileno=fds[0]), fds[1], fds[2]
        try:
            channel.settimeout(30)
            req = protocol.recv(channel)
            channel.close()
            self.start(req, header, out_w, err_w)
        except BaseException as e:  # noqa: BLE001
            _send_line(self.st_w, {"setup_error": f"run set-up: {type(e).__name__}: {e}"})
        os._exit(71)

    def start(self, req: dict, header: dict, out_w: int, err_w: int) -> None:
        """Become the program."""
        t_start = time.monotonic()
        limits = Limits.from_dict(header["limits"])
        disk = limits.disk_mb
        session = header.get("session")
        workdir, scratch = header.get("workdir"), header.get("scratch") or ()
        paths.check_task_dirs(session, workdir, scratch)
        if session or disk != self.prep.default_disk_mb or scratch:
            filesystem.adjust_run(disk, self.prep.default_disk_mb, session, workdir=workdir, scratch=scratch)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        stdin = os.memfd_create("stdin", 0)
        _write_all(stdin, protocol.unb64(req.get("stdin", "")))
        os.lseek(stdin, 0, os.SEEK_SET)
        os.dup2(stdin, 0)
        os.close(stdin)
        st_w = self.st_w
        close_fds_except([st_w, self.done_w])
        os.chdir(workdir or "/workspace")
        language = header.get("language")
        if self.prep.notify:  # from here on the server refuses mount calls (notify.py)
            _send_line(st_w, {SETUP_DONE: True})
        confine(limits, self.prep, header.get("cgroups", False), compiled=language in languages.COMPILED)
        if header.get("trace"):
            _send_line(st_w, {"trace": {"assigned": header["assigned"], "slot_got_fds": header["received"],
                                        "program_start": t_start, "confined": time.monotonic()}})
        if language not in languages.COMPILED:
            os.close(st_w)  # the code must not be able to forge the run's report
        for path, data in req.get("files", {}).items():
            parent = os.path.dirname(path)
            if parent:
                os.makedirs(parent, exist_ok=True)
            with open(path, "wb") as f:
                f.write(protocol.unb64(data))
        if language is None:  # a file operation: report what was asked for on stdout
            sys.path[:] = [p for p in sys.path if not p.startswith("/workspace")]
            if req.get("read"):
                got = paths.read_files(req["read"], disk * 2**20)
                got["files"] = {k: protocol.b64(v) for k, v in got["files"].items()}
                _write_all(1, json.dumps(got).encode())
            os._exit(0)
        env = dict(os.environ)  # the server already holds exactly the run's environment
        code = req["code"]
        if language == "python":
            languages.run_python(code, self.done_w)
        _default_signals()
        if language == "bash":
            languages.exec_bash(code, env)
        elif language in languages.COMPILED:
            os.set_inheritable(st_w, False)
            languages.compile_and_exec(language, code, env, limits, lambda obj: _send_line(st_w, obj))
        raise ValueError(f"unknown language {language!r}")


def confine(limits: Limits, prep: Prepared, have_cgroups: bool, compiled: bool = False) -> None:
    """The last barrier before untrusted code (the main seccomp filter and no_new_privs
    are already in place): rlimits, no capabilities, no more mounting (the second filter,
    or with the listener the server's EPERM). A compiled
    language keeps room for its compile limits; the program's own are set before exec."""
    cpu = max(1, int(limits.cpu_s + 0.999))
    if compiled:
        cpu = max(cpu, int(limits.compile_cpu() + 0.999))
    disk = limits.disk_mb * 2**20
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (disk, disk))
    resource.setrlimit(resource.RLIMIT_NOFILE, (limits.open_files,) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if not have_cgroups:
        mem = limits.memory_mb * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.processes,) * 2)
    sc.clear_capabilities()
    if not prep.notify:  # with the listener, the server refuses mounts from now on instead
        prep.seccomp_mounts.install()


def _default_signals() -> None:
    """Python ignores SIGPIPE and SIGXFSZ; exec'd programs must not inherit that."""
    for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGINT):
        signal.signal(sig, signal.SIG_DFL)


def _send_line(fd: int, obj: dict) -> None:
    _write_all(fd, json.dumps(obj).encode() + b"\n")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _write_file(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
