"""Resource limits for one sandboxed run. The defaults are the secure ones.

Standard library only: the fork server and each run rebuild a `Limits` from the request
(`Limits.from_dict`) under the system Python, with no site-packages.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

_OPTIONAL = ("compile_wall_s", "compile_cpu_s")


@dataclass(frozen=True)
class Limits:
    wall_s: float = 10.0
    """Wall-clock limit of the run; the whole process tree dies when it passes. For C and
    C++ it covers compile and run together, unless `compile_wall_s` is set."""
    cpu_s: float = 10.0
    """CPU time of the whole process tree (all threads and children). For C and C++ it
    covers compile and run together, unless `compile_cpu_s` is set."""
    memory_mb: int = 1024
    """Resident memory of the whole tree, files in its tmpfs included (cgroup limit)."""
    processes: int = 64
    """Processes and threads alive at once in the tree (pids cgroup)."""
    output_bytes: int = 1_048_576
    """Cap per stream on stdout and stderr; passing it ends the run with status output_limit."""
    disk_mb: int = 256
    """Size of the writable workspace, and separately of /tmp."""
    open_files: int = 1024
    """Open file descriptors per process (RLIMIT_NOFILE)."""
    network: bool = False
    """Only False is supported: runs get a network namespace with no interfaces up."""
    compile_wall_s: float | None = None
    """Wall-clock limit of the compile step of C and C++. None (the default): the compile
    step spends the run's own `wall_s`, so compile plus run end within `wall_s`, as a
    caller who asks for 10 s expects. A number: the compile step gets that much of its
    own, and `wall_s` starts when it ends (SandboxFusion's compile_timeout and
    run_timeout), so the whole run may take compile_wall_s + wall_s."""
    compile_cpu_s: float | None = None
    """CPU limit of the compile step; None spends the run's `cpu_s`, a number is a budget
    of its own, as for `compile_wall_s`."""

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "network":
                if v:
                    raise ValueError(
                        "Limits(network=True) is not supported: sandboxed code never gets a network; "
                        "ship the data it needs as files instead"
                    )
                continue
            if v is None and f.name in _OPTIONAL:
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, got {v!r}")

    def compile_wall(self) -> float:
        """How long the compile step may take."""
        return self.wall_s if self.compile_wall_s is None else self.compile_wall_s

    def compile_cpu(self) -> float:
        """How much CPU the compile step may use."""
        return self.cpu_s if self.compile_cpu_s is None else self.compile_cpu_s

    def total_wall_s(self, compiled: bool) -> float:
        """The longest a run may take from start to end, compile step included."""
        return self.wall_s + ((self.compile_wall_s or 0.0) if compiled else 0.0)

    def with_(self, **changes) -> "Limits":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "Limits":
        """The limits a request carries (`as_dict`), checked again on this side."""
        unknown = set(d) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"unknown limits {sorted(unknown)}")
        return cls(**d)
