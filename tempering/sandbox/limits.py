"""Resource limits for one sandboxed run. The defaults are the secure ones.

Standard library only: the fork server and each run rebuild a `Limits` from the request
(`Limits.from_dict`) under the system Python, with no site-packages. Not a dataclass:
`dataclasses` pulls `inspect`, `ast` and a dozen more modules into the fork server, and
every module it holds makes each fork slower. It behaves as a frozen dataclass would
(keyword or positional fields in order, ==, hash, repr, immutable).
"""

from __future__ import annotations

_OPTIONAL = ("compile_wall_s", "compile_cpu_s")


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

    def __init__(self, *args, **kwargs) -> None:
        if len(args) > len(FIELDS):
            raise TypeError(f"Limits takes at most {len(FIELDS)} positional arguments")
        given = dict(zip(FIELDS, args))
        for k, v in kwargs.items():
            if k not in FIELDS:
                raise TypeError(f"Limits got an unexpected keyword argument {k!r}")
            if k in given:
                raise TypeError(f"Limits got multiple values for argument {k!r}")
            given[k] = v
        for name in FIELDS:
            object.__setattr__(self, name, given.get(name, getattr(type(self), name)))
        self._check()

    def _check(self) -> None:
        for name in FIELDS:
            v = getattr(self, name)
            if name == "network":
                if v:
                    raise ValueError(
                        "Limits(network=True) is not supported: sandboxed code never gets a network; "
                        "ship the data it needs as files instead"
                    )
                continue
            if v is None and name in _OPTIONAL:
                continue
            if not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0:
                raise ValueError(f"Limits.{name} must be a positive number, got {v!r}")

    def __setattr__(self, name, value) -> None:
        raise AttributeError(f"Limits is frozen: use .with_({name}=...) for a changed copy")

    def __delattr__(self, name) -> None:
        raise AttributeError("Limits is frozen")

    def _values(self) -> tuple:
        return tuple(getattr(self, name) for name in FIELDS)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        return "Limits(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in FIELDS) + ")"

    def __reduce__(self):
        return (type(self), self._values())

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
        """A copy with `changes` applied (checked like a new one)."""
        return type(self)(**{**self.as_dict(), **changes})

    def as_dict(self) -> dict:
        return {name: getattr(self, name) for name in FIELDS}

    @classmethod
    def from_dict(cls, d: dict) -> "Limits":
        """The limits a request carries (`as_dict`), checked again on this side."""
        unknown = set(d) - set(FIELDS)
        if unknown:
            raise ValueError(f"unknown limits {sorted(unknown)}")
        return cls(**d)


FIELDS: tuple[str, ...] = tuple(Limits.__annotations__)
"""The limits, in order (what as_dict, from_dict and positional arguments use)."""
