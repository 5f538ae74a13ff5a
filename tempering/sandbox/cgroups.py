"""Per-run cgroups for memory, process count and CPU accounting: v1 (as on these
machines) or v2 where it is delegated to us. Used by the fork server, which is host root.

Every group lives under `tempering-<server pid>` inside the server's own cgroup, so a
server that died without cleaning up is found and swept by the next one. Directories are
held as open file descriptors so they keep working after the server pivots into the
sandbox root, where /sys is not mounted.
"""

from __future__ import annotations

import os
import signal
import time

ROOT = "/sys/fs/cgroup"


def _own_paths() -> dict[str, str]:
    """controller -> this process's cgroup path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    with open("/proc/self/cgroup") as f:
        for line in f:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            for c in controllers.split(",") if controllers else [""]:
                out[c] = path
    return out


def _write(dir_fd: int, name: str, value: str) -> None:
    fd = os.open(name, os.O_WRONLY, dir_fd=dir_fd)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def _read_fd(fd: int) -> str:
    os.lseek(fd, 0, os.SEEK_SET)
    return os.read(fd, 4096).decode()


def _kill_and_remove(dir_path: str) -> None:
    """Kill every process in a group tree and remove it, deepest first."""
    for dirpath, dirnames, _ in os.walk(dir_path, topdown=False):
        for _ in range(50):
            try:
                with open(os.path.join(dirpath, "cgroup.procs")) as f:
                    pids = [int(p) for p in f.read().split()]
            except OSError:
                break
            if not pids:
                break
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.01)
        for _ in range(50):  # a group whose last task is still exiting refuses rmdir briefly
            try:
                os.rmdir(dirpath)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.01)


class Cgroups:
    """The server's parent groups, one per controller it could use."""

    def __init__(self) -> None:
        self.version = 0
        self.parents: dict[str, int] = {}  # controller -> dir fd of tempering-<pid>
        self.bases: dict[str, int] = {}  # controller -> dir fd of the group tempering-<pid> lives in
        self.paths: dict[str, str] = {}
        self.name = f"tempering-{os.getpid()}"
        self.problem = ""
        try:
            self._setup()
        except OSError as e:
            self.problem = f"cgroups unavailable ({e}); memory and process limits fall back to rlimits"
            self.parents.clear()
            self.version = 0

    def _setup(self) -> None:
        own = _own_paths()
        name = f"tempering-{os.getpid()}"
        if os.path.exists(os.path.join(ROOT, "memory")) and "memory" in own:
            self.version = 1
            for ctl in ("memory", "pids", "cpuacct"):
                if ctl not in own:
                    continue
                base = os.path.join(ROOT, ctl, own[ctl].lstrip("/"))
                if not os.path.isdir(base):
                    continue
                sweep_stale(base)
                path = os.path.join(base, name)
                os.makedirs(path, exist_ok=True)
                self.paths[ctl] = path
                self.bases[ctl] = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
                self.parents[ctl] = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
            if "memory" not in self.parents:
                raise OSError("no memory cgroup")
        elif os.path.exists(os.path.join(ROOT, "cgroup.controllers")):
            base = os.path.join(ROOT, own.get("", "/").lstrip("/"))
            with open(os.path.join(base, "cgroup.subtree_control")) as f:
                enabled = f.read().split()
            if "memory" not in enabled or "pids" not in enabled:
                raise OSError(f"memory and pids are not delegated to {base} (cgroup.subtree_control: {enabled})")
            sweep_stale(base)
            path = os.path.join(base, name)
            os.makedirs(path, exist_ok=True)
            _write_path(os.path.join(path, "cgroup.subtree_control"), "+memory +pids +cpu")
            self.version = 2
            self.paths["unified"] = path
            self.bases["unified"] = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
            self.parents["unified"] = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        else:
            raise OSError("no cgroup hierarchy found")

    @property
    def available(self) -> bool:
        return self.version > 0

    def create(self, job: str, memory_mb: int, processes: int) -> "JobGroup":
        return JobGroup(self, job, memory_mb, processes)

    def close(self) -> None:
        """Kill whatever is left in our groups and remove them. Works through the open
        directory handles: after the pivot, /sys is not in this process's view."""
        for ctl, parent in self.parents.items():
            for child in os.listdir(parent):
                if _is_dir(parent, child):
                    for _ in range(50):
                        if _kill_procs(parent, f"{child}/cgroup.procs") == 0:
                            break
                        time.sleep(0.01)
                    try:
                        os.rmdir(child, dir_fd=parent)
                    except OSError:
                        pass
            os.close(parent)
            try:
                os.rmdir(self.name, dir_fd=self.bases[ctl])
            except OSError:
                pass
            os.close(self.bases[ctl])
        self.parents.clear()
        self.bases.clear()


def _is_dir(dir_fd: int, name: str) -> bool:
    import stat

    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _kill_procs(dir_fd: int, procs_file: str) -> int:
    """SIGKILL every process listed in a cgroup.procs file; returns how many there were."""
    try:
        fd = os.open(procs_file, os.O_RDONLY, dir_fd=dir_fd)
    except OSError:
        return 0
    try:
        pids = [int(p) for p in _read_fd(fd).split()]
    finally:
        os.close(fd)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(pids)


def _write_path(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def sweep_stale(base: str) -> None:
    """Remove groups left by servers that no longer run."""
    try:
        entries = os.listdir(base)
    except OSError:
        return
    for entry in entries:
        if not entry.startswith("tempering-"):
            continue
        pid = entry.removeprefix("tempering-")
        if pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            _kill_and_remove(os.path.join(base, entry))


class JobGroup:
    """One run's groups. join_fds go to the run's monitor, which writes itself in;
    stat_fds let it read usage after it has dropped privileges."""

    def __init__(self, cg: Cgroups, job: str, memory_mb: int, processes: int) -> None:
        self.cg, self.job = cg, job
        self.limits = (memory_mb, processes)
        self.join_fds: list[int] = []
        self.stat_fds: dict[str, int] = {}
        limit = str(memory_mb * 1024 * 1024)
        if cg.version == 1:
            for ctl, parent in cg.parents.items():
                os.mkdir(job, 0o755, dir_fd=parent)
                d = os.open(job, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent)
                try:
                    if ctl == "memory":
                        _write(d, "memory.limit_in_bytes", limit)
                        try:
                            _write(d, "memory.memsw.limit_in_bytes", limit)
                        except OSError:
                            pass
                        self.stat_fds["peak"] = os.open("memory.max_usage_in_bytes", os.O_RDONLY, dir_fd=d)
                        self.stat_fds["oom"] = os.open("memory.oom_control", os.O_RDONLY, dir_fd=d)
                        self.stat_fds["procs"] = os.open("cgroup.procs", os.O_RDONLY, dir_fd=d)
                    elif ctl == "pids":
                        _write(d, "pids.max", str(processes))
                    elif ctl == "cpuacct":
                        self.stat_fds["cpu"] = os.open("cpuacct.usage", os.O_RDONLY, dir_fd=d)
                    self.join_fds.append(os.open("cgroup.procs", os.O_WRONLY, dir_fd=d))
                finally:
                    os.close(d)
        else:
            parent = cg.parents["unified"]
            os.mkdir(job, 0o755, dir_fd=parent)
            d = os.open(job, os.O_RDONLY | os.O_DIRECTORY, dir_fd=parent)
            try:
                _write(d, "memory.max", limit)
                try:
                    _write(d, "memory.swap.max", "0")
                except OSError:
                    pass
                _write(d, "pids.max", str(processes))
                self.stat_fds["peak"] = os.open("memory.peak", os.O_RDONLY, dir_fd=d)
                self.stat_fds["oom"] = os.open("memory.events", os.O_RDONLY, dir_fd=d)
                self.stat_fds["cpu"] = os.open("cpu.stat", os.O_RDONLY, dir_fd=d)
                self.stat_fds["procs"] = os.open("cgroup.procs", os.O_RDONLY, dir_fd=d)
                self.join_fds.append(os.open("cgroup.procs", os.O_WRONLY, dir_fd=d))
            finally:
                os.close(d)

    def set_limits(self, memory_mb: int, processes: int) -> None:
        """Set the run's limits on a pooled group (nothing to write when they are the ones
        the group was made with, the common case)."""
        if (memory_mb, processes) == self.limits:
            return
        self.limits = (memory_mb, processes)
        limit = str(memory_mb * 1024 * 1024)
        if self.cg.version == 1:
            mem = self.cg.parents["memory"]
            try:  # memsw may never be below the memory limit: raise it first, lower it last
                _write(mem, f"{self.job}/memory.memsw.limit_in_bytes", limit)
                _write(mem, f"{self.job}/memory.limit_in_bytes", limit)
            except OSError:
                _write(mem, f"{self.job}/memory.limit_in_bytes", limit)
                try:
                    _write(mem, f"{self.job}/memory.memsw.limit_in_bytes", limit)
                except OSError:
                    pass
            if "pids" in self.cg.parents:
                _write(self.cg.parents["pids"], f"{self.job}/pids.max", str(processes))
        else:
            d = self.cg.parents["unified"]
            _write(d, f"{self.job}/memory.max", limit)
            _write(d, f"{self.job}/pids.max", str(processes))

    def fds(self) -> list[int]:
        return self.join_fds + list(self.stat_fds.values())

    def close_fds(self) -> None:
        for fd in self.fds():
            try:
                os.close(fd)
            except OSError:
                pass

    def remove(self) -> bool:
        """Remove the groups; False if a process is still inside (try again later)."""
        done = True
        for parent in self.cg.parents.values():
            try:
                os.rmdir(self.job, dir_fd=parent)
            except FileNotFoundError:
                pass
            except OSError:
                done = False
                self._kill_members(parent)
        return done

    def _kill_members(self, parent: int) -> None:
        _kill_procs(parent, f"{self.job}/cgroup.procs")


def join(join_fds: list[int]) -> None:
    """Called by the run's monitor: move the calling process into the run's groups."""
    for fd in join_fds:
        os.write(fd, b"0")


def members(stat_fds: dict[str, int]) -> list[int] | None:
    """The processes in a run's group, or None when that can't be known."""
    if "procs" not in stat_fds:
        return None
    return [int(p) for p in _read_fd(stat_fds["procs"]).split()]


def read_stats(stat_fds: dict[str, int], version: int) -> dict[str, float]:
    """peak memory (MB), oom kills, cpu seconds of the whole group."""
    out: dict[str, float] = {}
    if "peak" in stat_fds:
        out["peak_mb"] = int(_read_fd(stat_fds["peak"]).split()[0]) / 2**20
    if "oom" in stat_fds:
        for line in _read_fd(stat_fds["oom"]).splitlines():
            key, _, val = line.partition(" ")
            if key == "oom_kill":
                out["oom_kills"] = int(val)
    if "cpu" in stat_fds:
        raw = _read_fd(stat_fds["cpu"])
        if version == 1:
            out["cpu_s"] = int(raw.split()[0]) / 1e9
        else:
            for line in raw.splitlines():
                key, _, val = line.partition(" ")
                if key == "usage_usec":
                    out["cpu_s"] = int(val) / 1e6
    return out
