"""A sandbox workspace kept across runs, for multi-step tasks."""

from __future__ import annotations

import json
import uuid

from ..errors import SandboxInputError, SandboxUnavailable
from ..types import ExecResult
from . import protocol
from .client import Sandbox, _clean_path
from .languages import LANGUAGES
from .limits import Limits
from .paths import expected


class Session:
    """A workspace that persists across runs, for multi-step tasks. Each run is still a
    fresh, fully isolated process tree; only /workspace carries over (/tmp does not)."""

    MAX_SNAPSHOTS = 16

    def __init__(self, sandbox: Sandbox, language: str, limits: Limits) -> None:
        if language not in LANGUAGES:
            raise SandboxInputError(f"unknown language {language!r}: choose one of {', '.join(LANGUAGES)}")
        self.sandbox, self.language, self.limits = sandbox, language, limits
        self.id = uuid.uuid4().hex[:16]
        self._snapshots = 0
        self.closed = False
        reply = sandbox._op({"op": "session_open", "session": self.id, "disk_mb": limits.disk_mb})
        if not reply.get("ok"):
            raise SandboxUnavailable(f"could not open a sandbox session: {reply.get('error')}")

    def run(self, code: str, stdin: str | bytes = "", language: str | None = None,
            limits: Limits | None = None, files: dict | None = None, *,
            workdir: str | None = None, scratch: tuple[str, ...] = ()) -> ExecResult:
        """`workdir` (one of paths.TASK_DIRS, e.g. "/app") shows the workspace there too and
        starts the run in it; `scratch` names other TASK_DIRS that get a fresh, empty tmpfs
        for this run only. Both serve tasks written for fixed paths (Terminal-Bench)."""
        self._check_open()
        return self.sandbox._run(code, language or self.language, stdin, files, limits or self.limits, self.id,
                                 workdir=workdir, scratch=tuple(scratch))

    def _read(self, patterns: list[str]) -> tuple[dict[str, bytes], dict[str, str]]:
        """Files (or globs) from the workspace, read inside the sandbox."""
        lim = self.limits.with_(output_bytes=self.limits.disk_mb * 2**20 * 3 // 2 + 4096)
        r = self.sandbox._run("", None, "", None, lim, self.id, read=patterns)
        if r.status != "ok":
            raise OSError(f"could not read from the session: {r.status} {r.detail} {r.stderr}".strip())
        try:
            reply = json.loads(r.stdout_bytes or b"{}")
            files = {k: protocol.unb64(v) for k, v in reply["files"].items()}
            errors = {str(k): str(v) for k, v in reply["errors"].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise OSError(f"the session's file read returned malformed output ({e})") from None
        # The reply comes from inside the sandbox: keep only names this request could produce.
        for name in [k for k in files if not expected(patterns, k)]:
            errors[name] = "not a path this read asked for; dropped"
            del files[name]
        return files, errors

    def write_file(self, path: str, data: str | bytes) -> None:
        self._check_open()
        r = self.sandbox._run("", None, "", {path: data}, self.limits, self.id)
        if not r.ok:
            raise OSError(f"could not write {path!r} in the session: {r.status} {r.detail} {r.stderr}".strip())

    def read_file(self, path: str) -> bytes:
        self._check_open()
        clean = _clean_path(path)
        files, errors = self._read([clean])
        if clean not in files:
            raise FileNotFoundError(f"{path!r} could not be read from the session: {errors.get(clean, 'no such file')}")
        return files[clean]

    def snapshot(self) -> int:
        """Copy the workspace aside; returns the id `restore` takes."""
        self._check_open()
        if self._snapshots >= self.MAX_SNAPSHOTS:
            raise SandboxInputError(f"a session keeps at most {self.MAX_SNAPSHOTS} snapshots")
        index = self._snapshots
        reply = self.sandbox._op({"op": "snapshot", "session": self.id, "index": index})
        if not reply.get("ok"):
            raise OSError(f"snapshot failed: {reply.get('error')}")
        self._snapshots += 1
        return index

    def restore(self, snapshot: int) -> None:
        self._check_open()
        reply = self.sandbox._op({"op": "restore", "session": self.id, "index": int(snapshot)})
        if not reply.get("ok"):
            raise OSError(f"restore failed: {reply.get('error')}")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.sandbox._control is not None:
            self.sandbox._op({"op": "session_close", "session": self.id})

    def _check_open(self) -> None:
        if self.closed:
            raise SandboxInputError("this session is closed")

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
