"""Resource limits for one sandboxed run. The defaults are the secure ones."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace


@dataclass(frozen=True)
class Limits:
    wall_s: float = 10.0
    """Wall-clock limit of the run; the whole process tree dies when it passes."""
    cpu_s: float = 10.0
    """CPU time of the whole process tree (all threads and children)."""
    memory_mb: int = 1024
    """Resident memory of the whole tree, files in its tmpfs included (cgroup limit)."""
    processes: int = 64
    """Processes and threads alive at once in the tree (pids cgroup)."""
    output_bytes: int = 1_048_576
    """Cap per stream on stdout and stderr; passing it ends the run with status output_limit."""
    disk_mb: int = 256
    """Size of the writable workspace, and separately of /tmp."""
    open_files: int = 1024
    network: bool = False
    """Only False is supported: runs get a network namespace with no interfaces up."""
    compile_wall_s: float = 30.0
    """Limits of the compile step of compiled languages, separate from the run's."""
    compile_cpu_s: float = 30.0

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
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Limits.{f.name} must be a positive number, got {v!r}")

    def with_(self, **changes) -> "Limits":
        return replace(self, **changes)

    def as_dict(self) -> dict:
        return asdict(self)
