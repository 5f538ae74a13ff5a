"""The caller's side: `Sandbox().run(...)`, `Sandbox().session(...)`.

The caller never runs untrusted code itself. It starts one fork server (a separate,
confined system-Python process), asks it for a run, and talks to that run's monitor over
a private socket. Thread-safe: run from as many threads as you like.
"""

from __future__ import annotations

import array
import functools
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import SandboxInputError, SandboxUnavailable
from ..types import ExecResult
from . import audit, protocol
from .languages import COMPILED, LANGUAGES
from .limits import Limits
from .paths import PathError, check_task_dirs, clean_path

if TYPE_CHECKING:
    from .session import Session

_BOOT = "import sys; sys.path.insert(0, sys.argv[1]); from tempering.sandbox.server import main; main()"
_GRACE_S = 10.0  # how much longer than its own limits the caller waits for a run's result
QUEUE_TIMEOUT_S = 600.0  # how long a run may wait for a free slot before it is given up


@functools.lru_cache(maxsize=64)
def _limits_dict(lim: Limits) -> dict:
    return lim.as_dict()


def sandbox_library() -> str | None:
    """The host directory of Python packages runs may import (read-only, at /opt/pylib):
    $TEMPERING_SANDBOX_LIB, else `sandbox-lib` in this interpreter's prefix (the venv, where
    `make setup` installs numpy and manifold3d for the CAD tool), else none."""
    path = os.environ.get("TEMPERING_SANDBOX_LIB") or os.path.join(sys.prefix, "sandbox-lib")
    return os.path.realpath(path) if os.path.isdir(path) else None


def find_python() -> str:
    """The interpreter the fork server runs: the system's, which the sandbox root shows."""
    override = os.environ.get("TEMPERING_SANDBOX_PYTHON")
    for cand in ([override] if override else []) + ["/usr/bin/python3"]:
        real = os.path.realpath(cand)
        if real.startswith("/usr/") and os.access(real, os.X_OK):
            return real
    raise SandboxUnavailable(
        "the sandbox needs a system Python under /usr (e.g. /usr/bin/python3): install it with "
        "`apt-get install python3`, or point TEMPERING_SANDBOX_PYTHON at one under /usr"
    )


def _clean_path(path: str) -> str:
    try:
        return clean_path(path)
    except PathError as e:
        raise SandboxInputError(str(e)) from None


class Sandbox:
    """Runs untrusted code in full isolation. Start-up is lazy; `close()` (or `with`)
    stops the fork server and removes everything it made."""

    def __init__(self, limits: Limits | None = None, pool_size: int = 4) -> None:
        self.limits = limits or Limits()
        self.pool_size = pool_size
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._control: socket.socket | None = None
        self.features: dict = {}

    # -- lifecycle

    def start(self) -> "Sandbox":
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start_locked()
        return self

    def _start_locked(self) -> None:
        if os.geteuid() != 0:
            raise SandboxUnavailable(
                "the sandbox runs as root (it makes cgroups and drops each run to an unprivileged uid); "
                "run as root, e.g. in a VM or container started with --privileged"
            )
        if not shutil.which("cp", path="/usr/bin:/bin"):
            raise SandboxUnavailable("the sandbox needs coreutils in /usr/bin")
        python = find_python()
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        root = str(Path(__file__).resolve().parents[2])
        env = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONIOENCODING": "utf-8"}
        self._proc = subprocess.Popen(
            [python, "-I", "-S", "-B", "-c", _BOOT, root, str(theirs.fileno()), str(self.pool_size),
             json.dumps(self.limits.as_dict()), sandbox_library() or ""],
            pass_fds=[theirs.fileno()],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            cwd="/",
        )
        theirs.close()
        mine.settimeout(30)
        try:
            hello = json.loads(mine.recv(65536) or b"{}")
        except (socket.timeout, ValueError) as e:
            self._proc.kill()
            raise SandboxUnavailable(f"the sandbox's fork server did not start: {e}") from None
        mine.settimeout(None)
        if not hello.get("ready"):
            self._proc.wait()
            raise SandboxUnavailable(
                f"the sandbox cannot isolate runs on this machine: {hello.get('error', 'the fork server exited')}"
            )
        self._control = mine
        self.features = hello["features"]

    def close(self) -> None:
        """Stop the fork server; it kills its slots and removes its cgroups first."""
        self._stop(graceful=True)

    def __enter__(self) -> "Sandbox":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001
            pass

    # -- talking to the server

    def _request(self, header: dict, extra_fds: list[int] = ()) -> socket.socket:
        """Send one request with a fresh private channel; return our end of it. A server
        that has exited is replaced first: its runs' processes may still hold the control
        socket for a moment, so a send to it can succeed and then be reset."""
        if self._control is not None and self._proc is not None and self._proc.poll() is not None:
            self._forget_server()
        if self._control is None:
            self.start()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            with self._lock:
                if self._control is None:
                    raise SandboxUnavailable("the sandbox is closed")
                fds = array.array("i", [theirs.fileno(), *extra_fds])
                self._control.sendmsg([json.dumps(header).encode()], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
        finally:
            theirs.close()
        return ours

    def _op(self, header: dict, timeout: float = 60.0) -> dict:
        chan = self._request(header)
        try:
            chan.settimeout(timeout)
            return protocol.recv(chan)
        except (EOFError, OSError) as e:
            return {"error": f"no reply from the fork server ({e})"}
        finally:
            chan.close()

    # -- runs

    def run(
        self,
        code: str,
        language: str = "python",
        stdin: str | bytes = "",
        files: dict[str, str | bytes] | None = None,
        limits: Limits | None = None,
        fetch: list[str] | tuple[str, ...] = (),
        *,
        trace: bool = False,
    ) -> ExecResult:
        """Run `code` once in a fresh, isolated workspace and return what happened.
        `files` are written into the workspace first; `fetch` names files (or globs) to
        bring back in `ExecResult.files` afterwards."""
        if fetch:
            with self.session(language or "bash", limits or self.limits) as s:
                r = s.run(code, stdin, files=files)
                got = s._read(list(fetch))
                return replace(r, files=got[0], detail=r.detail or _errors_line(got[1]))
        return self._run(code, language, stdin, files, limits or self.limits, None, trace=trace)

    def _run(self, code, language, stdin, files, lim: Limits, session: str | None, read=(), trace=False,
             workdir: str | None = None, scratch: tuple[str, ...] = ()) -> ExecResult:
        try:
            check_task_dirs(session, workdir, scratch)
        except ValueError as e:
            raise SandboxInputError(str(e)) from None
        if language is not None and language not in LANGUAGES:
            raise SandboxInputError(f"unknown language {language!r}: choose one of {', '.join(LANGUAGES)}")
        if language is not None and not isinstance(code, str):
            raise SandboxInputError("code must be a str")
        job = os.urandom(8).hex()
        enc = lambda v: protocol.b64(v.encode() if isinstance(v, str) else bytes(v))  # noqa: E731
        req = {
            "code": code,
            "stdin": enc(stdin),
            "files": {_clean_path(p): enc(v) for p, v in (files or {}).items()},
            "read": [_clean_path(p) for p in read],
        }
        header = {"op": "run", "job": job, "language": language, "limits": _limits_dict(lim), "session": session,
                  "trace": trace}
        if workdir or scratch:
            header.update(workdir=workdir, scratch=list(scratch))
        t0 = time.monotonic()
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        try:
            try:
                chan = self._request(header, extra_fds=[out_w, err_w])
            except OSError:
                # nothing reached a server: replace it and send once more
                self._forget_server()
                chan = self._request(header, extra_fds=[out_w, err_w])
        except OSError as e:
            for fd in (out_r, err_r):
                os.close(fd)
            self._forget_server()
            result = _failed(f"could not reach the fork server ({e}); it restarts on the next run", t0)
            audit.LOG.note(result.status, result.detail, language, result.wall_s)
            return result
        finally:
            os.close(out_w)
            os.close(err_w)
        try:
            result = self._collect(chan, out_r, err_r, job, language, lim, req, t0, trace)
        finally:
            chan.close()
            os.close(out_r)
            os.close(err_r)
        audit.LOG.note(result.status, result.detail, language, result.wall_s, result.audit)
        return result

    def _collect(self, chan, out_r, err_r, job, language, lim, req, t0, trace) -> ExecResult:
        """Send the request, read stdout/stderr up to their caps, and the server's verdict."""
        try:
            protocol.send(chan, req)
        except OSError as e:
            return _failed(f"the run did not take its request ({e})", t0)
        wait = lim.total_wall_s(compiled=language in COMPILED) + _GRACE_S
        verdict, out, err, truncated = self._read_run(chan, out_r, err_r, job, lim.output_bytes, wait, t0)
        if verdict is None:
            return _failed(f"no result within {wait:.0f} s; the run was killed", t0)
        status = verdict.get("status", "sandbox_error")
        detail = verdict.get("detail", "")
        if truncated and status in ("ok", "error", "killed"):
            # The run may have ended on its own before our kill for the overflow landed.
            status, detail = "output_limit", f"output passed {lim.output_bytes} bytes"
        elif status == "error" and language == "python" and err.rstrip().endswith(b"MemoryError"):
            status, detail = "memory", "MemoryError"
        return ExecResult(
            status=status,
            exit_code=verdict.get("exit_code"),
            stdout=out.decode("utf-8", "replace"),
            stderr=err.decode("utf-8", "replace"),
            wall_s=float(verdict.get("wall_s", time.monotonic() - t0)),
            cpu_s=float(verdict.get("cpu_s", 0.0)),
            peak_memory_mb=float(verdict.get("peak_memory_mb", 0.0)),
            truncated=truncated,
            detail=detail,
            timings=_timings(verdict.get("trace"), t0) if trace else {},
            stdout_bytes=out,
            audit=tuple(verdict.get("audit", ())),
        )

    def _read_run(self, chan, out_r, err_r, job, cap, wait, t0) -> tuple[dict | None, bytes, bytes, bool]:
        """Read both output pipes (each up to `cap` bytes; past it, kill the run) and the
        verdict frame, until both pipes end. The clock is the queue timeout until the server
        says the run is assigned, then `wait`; past it, kill the run and give it 5 s more.
        Returns (verdict or None, stdout, stderr, truncated)."""
        bufs = {out_r: bytearray(), err_r: bytearray()}
        open_fds = {out_r, err_r}
        truncated, verdict, assigned, killed_late = False, None, False, False
        deadline = t0 + QUEUE_TIMEOUT_S
        while verdict is None or open_fds:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                if killed_late or verdict is not None:
                    break
                self._op({"op": "kill", "job": job, "reason": "timeout"}, timeout=5)
                killed_late, deadline = True, time.monotonic() + 5
                continue
            watch = list(open_fds) + ([chan] if verdict is None else [])
            ready, _, _ = select.select(watch, [], [], remaining)
            for r in ready:
                if r is chan:
                    try:
                        frame = protocol.recv(chan)
                    except (EOFError, OSError, ValueError) as e:
                        frame = {"status": "sandbox_error", "detail": f"no verdict from the fork server ({e})"}
                    if frame.get("assigned") and not assigned:
                        assigned = True
                        deadline = time.monotonic() + wait
                        continue
                    verdict = frame
                    # everything in the run is dead now: the pipes end within moments
                    deadline = min(deadline, time.monotonic() + 5)
                    continue
                chunk = os.read(r, 1 << 16)
                if not chunk:
                    open_fds.discard(r)
                    continue
                buf = bufs[r]
                room = cap - len(buf)
                buf += chunk[: max(room, 0)]
                if len(chunk) > room and not truncated:
                    truncated = True
                    self._op({"op": "kill", "job": job, "reason": "output_limit"}, timeout=5)
        return verdict, bytes(bufs[out_r]), bytes(bufs[err_r]), truncated

    def _forget_server(self) -> None:
        """The server is unreachable: kill it; the next run starts a new one."""
        self._stop(graceful=False)

    def _stop(self, graceful: bool) -> None:
        with self._lock:
            if self._control is not None:
                self._control.close()  # the server's cue to clean up and exit
                self._control = None
            if self._proc is not None:
                try:
                    self._proc.wait(timeout=15 if graceful else 0.5)
                except subprocess.TimeoutExpired:
                    self._proc.kill()
                    self._proc.wait()
                self._proc = None

    def session(self, language: str = "bash", limits: Limits | None = None) -> "Session":
        """A workspace kept across runs (see session.py)."""
        from .session import Session

        return Session(self, language, limits or self.limits)


_shared: Sandbox | None = None
_shared_lock = threading.Lock()


def shared_sandbox() -> Sandbox:
    """One sandbox for the whole process (environments and verifiers use it), started on
    first use and closed at exit: the local fork server, or a `SandboxPool` over the
    replicas TEMPERING_SANDBOX_URLS names (set from a config's sandbox.urls)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            import atexit

            urls = [u.strip() for u in os.environ.get("TEMPERING_SANDBOX_URLS", "").split(",") if u.strip()]
            if urls:  # sandbox.urls (remote.use_config): every env's runs go to the replicas
                from .remote import SandboxPool

                _shared = SandboxPool(urls, token=os.environ.get("TEMPERING_SANDBOX_TOKEN") or None,
                                      retries=int(os.environ.get("TEMPERING_SANDBOX_RETRIES", "3")))
            else:
                _shared = Sandbox(pool_size=4)
            atexit.register(_shared.close)
        return _shared


def _timings(trace: dict | None, t0: float) -> dict[str, float]:
    """Milliseconds from the call to each phase the run reported (monotonic clock)."""
    return {k: round((v - t0) * 1000, 3) for k, v in sorted((trace or {}).items(), key=lambda kv: kv[1])}


def _errors_line(errors: dict) -> str:
    return "; ".join(f"{k}: {v}" for k, v in errors.items())


def _failed(detail: str, t0: float) -> ExecResult:
    return ExecResult("sandbox_error", None, "", "", time.monotonic() - t0, 0.0, 0.0, detail=detail)
