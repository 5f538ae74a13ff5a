"""How a run ended, named from what the server saw (never from what the program says,
except its own exit code)."""

from __future__ import annotations

import json
import signal

from .limits import Limits


def verdict(info: dict, reason: str | None, wall: float, stats: dict, limits: Limits, compiling: bool = False) -> dict:
    """Name why the run ended (the caller adds output_limit, which only it can see).
    `compiling`: the server ended it before its compile step reported."""
    exit_code, sig = info.get("exit_code"), info.get("signal")
    cpu = stats.get("cpu_s", info["rusage_cpu_s"])
    peak = stats.get("peak_mb", info["maxrss_kb"] / 1024)
    detail = ""
    if "setup_error" in info:
        status, detail = "sandbox_error", info["setup_error"]
    elif reason == "output_limit":
        status, detail = "output_limit", f"output passed {limits.output_bytes} bytes"
    elif reason in ("timeout", "cpu") and (compiling or info.get("compile") == "timeout"):
        # the compile step ran out of time: whether its own rlimit or the server's clock
        # got there first is a race, and the verdict must not depend on it
        status, detail = "timeout", "compile timeout"
    elif reason == "timeout":
        status, detail = "timeout", f"wall time passed {limits.wall_s} s"
    elif reason == "cpu":
        status, detail = "timeout", f"cpu time passed {limits.cpu_s} s"
    elif stats.get("oom_kills", 0) > 0:
        status, detail = "memory", f"memory passed {limits.memory_mb} MB"
    elif sig in (signal.SIGXCPU, signal.SIGKILL) and info["rusage_cpu_s"] >= limits.cpu_s * 0.9:
        status, detail = "timeout", f"cpu time passed {limits.cpu_s} s"
    elif info.get("compile") in ("failed", "timeout"):
        status = "error" if info["compile"] == "failed" else "timeout"
        detail = f"compile {info['compile']}"
    elif reason == "killed":
        status, detail = "killed", "killed on request"
    elif sig is not None:
        status, detail = "killed", f"killed by signal {sig} ({signal.Signals(sig).name})"
    elif exit_code == 0:
        status = "ok"
    else:
        status = "error"
    return {
        "status": status,
        "exit_code": (-sig if sig is not None else exit_code),
        "wall_s": wall,
        "cpu_s": cpu,
        "peak_memory_mb": peak,
        "detail": detail,
    }


def parse_status(raw: bytes | bytearray) -> dict:
    info: dict = {"trace": {}}
    for line in bytes(raw).splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        info["trace"].update(obj.pop("trace", {}))
        info.update(obj)
    return info
