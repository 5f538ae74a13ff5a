"""The native API: everything the in-process `Sandbox` does, over HTTP.

    POST   /v1/run                          one run in a fresh workspace -> ExecResult JSON
    POST   /v1/sessions                     open a workspace kept across runs -> {id, replica}
    POST   /v1/sessions/{id}/run            run in it (workdir, scratch as Session.run)
    PUT    /v1/sessions/{id}/file           write {path, data (base64)}
    GET    /v1/sessions/{id}/file?path=P    read -> {path, data (base64)}
    POST   /v1/sessions/{id}/snapshot       -> {snapshot}
    POST   /v1/sessions/{id}/restore        {snapshot}
    DELETE /v1/sessions/{id}                close it
    POST   /v1/verify                       a code task and a solution -> the verifier's Score
    GET    /v1/audit                        this token's recent runs that the sandbox stopped something in

A session lives on the replica that opened it (the fork server holds its workspace): a
client must pin it there, and a replica that goes away takes its sessions with it. A
session is visible only to the token that opened it and closes after `session_idle_s`.
"""

from __future__ import annotations

import base64
import binascii
import math
import secrets
import threading
import time
from dataclasses import dataclass, field

from fastapi import APIRouter, HTTPException, Request
from pydantic import BaseModel, ConfigDict, Field, model_validator

from tempering.errors import SandboxInputError, TaskError
from tempering.sandbox.limits import FIELDS, Limits


def utf8_only(data):
    """`data` (a request body as parsed) if every string in it is valid Unicode. JSON may
    escape a lone surrogate ("\\ud800"), which Python decodes but no run, file or reply can
    carry as UTF-8; as a ValueError from a validator it becomes a 422. A loop, not
    recursion: the body may nest as deep as the JSON parser allows."""
    todo = [data]
    while todo:
        v = todo.pop()
        if isinstance(v, str):
            try:
                v.encode()
            except UnicodeEncodeError as e:
                raise ValueError(f"text that is not valid Unicode ({e.object[e.start:e.end]!r}, a lone "
                                 "surrogate): send UTF-8 text") from None
        elif isinstance(v, dict):
            todo.extend(v)
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
    return data


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @model_validator(mode="before")
    @classmethod
    def unicode_text(cls, data):
        return utf8_only(data)


class RunBody(_Strict):
    code: str
    language: str = "python"
    stdin: str = Field("", description="text on stdin; stdin_b64 for bytes")
    stdin_b64: str | None = None
    files: dict[str, str] = Field({}, description="path -> base64 content")
    fetch: list[str] = []
    limits: dict[str, float | int | None] = Field({}, description=f"any of {', '.join(FIELDS)}")


class SessionBody(_Strict):
    language: str = "bash"
    limits: dict[str, float | int | None] = {}


class SessionRunBody(RunBody):
    language: str | None = None  # type: ignore[assignment]
    workdir: str | None = None
    scratch: list[str] = []


class FileBody(_Strict):
    path: str
    data: str = Field(..., description="base64 content")


class RestoreBody(_Strict):
    snapshot: int


class VerifyBody(_Strict):
    task: dict = Field(..., description="{id, entry_point, prompt, test | cases}, or a HumanEval record")
    solution: str


def b64(field_name: str, value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SandboxInputError(f"{field_name} is not base64: send the bytes base64-encoded") from None


_WHOLE = tuple(name for name in FIELDS if Limits.__annotations__[name] in ("int", int))
"""The limits that count things (bytes, MB, processes, files)."""


def limits_of(defaults: Limits, given: dict) -> Limits:
    unknown = sorted(set(given) - set(FIELDS))
    if unknown:
        raise SandboxInputError(f"unknown limits {unknown}: the sandbox's limits are {', '.join(FIELDS)}")
    given = dict(given)
    for name, v in given.items():
        # JSON numbers arrive as floats: a NaN passes Limits' `v <= 0` check, and a
        # fractional count (output_bytes=1.5) breaks the run's byte arithmetic
        if isinstance(v, float) and not math.isfinite(v):
            raise SandboxInputError(f"limits.{name} must be a finite number, got {v}")
        if name in _WHOLE and isinstance(v, float):
            if not v.is_integer():
                raise SandboxInputError(f"limits.{name} must be a whole number, got {v}")
            given[name] = int(v)
    for name, v in given.items():
        low, high = BOUNDS.get(name, (None, None))
        if v is not None and high is not None and isinstance(v, (int, float)) and not low <= v <= high:
            raise SandboxInputError(f"limits.{name} must be in [{low:g}, {high:g}] on this service, got {v:g}")
    try:
        return defaults.with_(**given)
    except (TypeError, ValueError) as e:
        raise SandboxInputError(str(e)) from None


BOUNDS = {"wall_s": (0.001, 3600), "cpu_s": (0.001, 3600), "compile_wall_s": (0.001, 3600),
          "compile_cpu_s": (0.001, 3600), "memory_mb": (16, 65536), "processes": (1, 4096),
          "output_bytes": (1, 256 * 2**20), "disk_mb": (1, 65536), "open_files": (16, 65536)}
"""What a request may ask for: a caller with a token may not hold a slot for days, or ask
the kernel for limits it cannot set (which would read as a sandbox failure, not bad input)."""


@dataclass
class _Open:
    session: object
    owner: str
    used: float
    lock: threading.Lock = field(default_factory=threading.Lock)


class Sessions:
    """The open sessions of this replica, by id, each usable only by its owner."""

    def __init__(self, idle_s: float, per_owner: int) -> None:
        self.idle_s, self.per_owner = idle_s, per_owner
        self._open: dict[str, _Open] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._open)

    def add(self, session, owner: str) -> str:
        with self._lock:
            if sum(1 for o in self._open.values() if o.owner == owner) >= self.per_owner:
                session.close()
                raise HTTPException(429, f"{owner} already has {self.per_owner} sessions open: close one first",
                                    headers={"Retry-After": "5"})
            sid = secrets.token_hex(16)
            self._open[sid] = _Open(session, owner, time.monotonic())
            return sid

    def get(self, sid: str, owner: str) -> _Open:
        with self._lock:
            entry = self._open.get(sid)
        if entry is None or entry.owner != owner:
            raise HTTPException(404, f"no open session {sid!r} on this replica (closed, expired, or opened "
                                     "on another replica: a session stays on the replica that opened it)")
        entry.used = time.monotonic()
        return entry

    def pop(self, sid: str, owner: str):
        entry = self.get(sid, owner)
        with self._lock:
            self._open.pop(sid, None)
        return entry.session

    def expire(self) -> int:
        """Close sessions idle past idle_s; how many were closed."""
        now = time.monotonic()
        with self._lock:
            stale = [k for k, o in self._open.items() if now - o.used > self.idle_s and not o.lock.locked()]
            gone = [self._open.pop(k) for k in stale]
        for o in gone:
            o.session.close()
        return len(gone)

    def close_all(self) -> None:
        with self._lock:
            gone, self._open = list(self._open.values()), {}
        for o in gone:
            o.session.close()


def router(service) -> APIRouter:
    """The native routes over `service` (app.Service: the sandbox, its sessions, admission)."""
    api = APIRouter(prefix="/v1")

    @api.post("/run")
    async def run(body: RunBody, request: Request) -> dict:
        who = service.caller(request)
        stdin = b64("stdin_b64", body.stdin_b64) if body.stdin_b64 is not None else body.stdin
        files = {p: b64(f"files[{p!r}]", v) for p, v in body.files.items()}
        lim = limits_of(service.limits, body.limits)
        r = await service.execute(who, "run", lambda: service.sandbox.run(
            body.code, body.language, stdin, files, lim, fetch=body.fetch))
        return r.to_json()

    @api.post("/sessions")
    async def open_session(body: SessionBody, request: Request) -> dict:
        who = service.caller(request)
        lim = limits_of(service.limits, body.limits)
        await service.blocking(service.sessions.expire)  # idle ones go before their owner's count is checked
        s = await service.blocking(lambda: service.sandbox.session(body.language, lim))
        return {"id": service.sessions.add(s, who), "replica": service.name}

    @api.post("/sessions/{sid}/run")
    async def session_run(sid: str, body: SessionRunBody, request: Request) -> dict:
        who = service.caller(request)
        entry = service.sessions.get(sid, who)
        stdin = b64("stdin_b64", body.stdin_b64) if body.stdin_b64 is not None else body.stdin
        files = {p: b64(f"files[{p!r}]", v) for p, v in body.files.items()} or None
        lim = limits_of(entry.session.limits, body.limits) if body.limits else None

        def go():
            with entry.lock:
                return entry.session.run(body.code, stdin, body.language, lim, files, workdir=body.workdir,
                                         scratch=tuple(body.scratch))
        return (await service.execute(who, "session_run", go)).to_json()

    @api.put("/sessions/{sid}/file")
    async def write_file(sid: str, body: FileBody, request: Request) -> dict:
        entry = service.sessions.get(sid, service.caller(request))
        data = b64("data", body.data)

        def go():
            with entry.lock:
                entry.session.write_file(body.path, data)
        await service.blocking(go)
        return {"path": body.path, "bytes": len(data)}

    @api.get("/sessions/{sid}/file")
    async def read_file(sid: str, path: str, request: Request) -> dict:
        entry = service.sessions.get(sid, service.caller(request))

        def go():
            with entry.lock:
                return entry.session.read_file(path)
        try:
            data = await service.blocking(go)
        except FileNotFoundError as e:
            raise HTTPException(404, str(e)) from None
        return {"path": path, "data": base64.b64encode(data).decode()}

    @api.post("/sessions/{sid}/snapshot")
    async def snapshot(sid: str, request: Request) -> dict:
        entry = service.sessions.get(sid, service.caller(request))
        return {"snapshot": await service.blocking(lambda: entry.session.snapshot())}

    @api.post("/sessions/{sid}/restore")
    async def restore(sid: str, body: RestoreBody, request: Request) -> dict:
        entry = service.sessions.get(sid, service.caller(request))
        await service.blocking(lambda: entry.session.restore(body.snapshot))
        return {"restored": body.snapshot}

    @api.delete("/sessions/{sid}")
    async def close_session(sid: str, request: Request) -> dict:
        session = service.sessions.pop(sid, service.caller(request))
        await service.blocking(session.close)
        return {"closed": sid}

    @api.post("/verify")
    async def verify(body: VerifyBody, request: Request) -> dict:
        from tempering.envs.code.verify import CodeTask, verify_code

        who = service.caller(request)
        try:
            task = CodeTask.from_json(body.task)
            module = task.module(body.solution)  # a prompt that is not text fails here
        except (TaskError, KeyError, TypeError, ValueError) as e:
            raise SandboxInputError(f"task is not a code task ({e}): give {{id, entry_point, prompt, test | cases}} "
                                    "or a HumanEval record") from None

        def go():
            try:
                return verify_code(task, module, service.sandbox)
            except SandboxInputError:
                raise
            except (KeyError, TypeError, ValueError, RecursionError) as e:
                # all verify_code reads before the run is the caller's task: cases that are
                # not {args: [...], expected: value}, or values nested past the recursion limit
                raise SandboxInputError(f"the task could not be checked ({type(e).__name__}: {e}): cases are "
                                        "[{args: [...], expected: value}, ...]") from None
        score = await service.execute(who, "verify", go, scored=True)
        return {"passed": score.passed, "reward": score.value, "status": score.status, "details": score.details}

    @api.get("/audit")
    async def audit(request: Request, limit: int = 100) -> dict:
        who = service.caller(request)
        entries = [e for e in list(service.audit_log) if e["token"] == who]
        return {"entries": entries[-max(1, min(limit, 1000)):]}

    return api
