"""The sandbox service: a thin ASGI layer over the `Sandbox` the trainer uses in-process.

    create_app(Settings(...), sandbox) -> FastAPI

Routes: SandboxFusion's `POST /run_code` and `GET /v1/ping` (fusion.py), the native API
(native.py), `/healthz` (the process answers), `/readyz` (the fork server is up and the
replica is not draining), `/metrics` (Prometheus). Everything but ping, healthz and
readyz needs a token (admission.py) unless the service was started without tokens, which
`serve` allows on loopback only.

A run is blocking work for the fork server: it goes to a thread, at most `workers` at once
(the fork server's pool), behind the caller's admission slot. While draining (SIGTERM),
runs already admitted finish and new requests get 503.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Callable

import anyio
from fastapi import FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from tempering.errors import SandboxInputError, SandboxUnavailable
from tempering.sandbox.limits import Limits
from tempering.types import ExecResult

from . import fusion, native
from .admission import Admission, Busy, token_name

OPEN_PATHS = ("/v1/ping", "/healthz", "/readyz")
DOC_PATHS = ("/openapi.json", "/docs", "/docs/oauth2-redirect", "/redoc")


@dataclass(frozen=True)
class Settings:
    tokens: dict[str, str]
    """token -> name; empty: no authentication (serve allows it on loopback only)."""
    name: str = "sandbox"
    """This replica's name: SandboxFusion's `executor_pod_name`, the X-Tempering-Replica header."""
    workers: int = 4
    """Runs at once (the fork server's pool of warm slots)."""
    per_token: int = 0
    """Runs at once per token; 0: `workers`."""
    queue: int = 256
    """Requests per token that may wait for a slot; past that, 429 with Retry-After."""
    max_request_bytes: int = 16 * 2**20
    """Largest request body; a larger one gets 413."""
    session_idle_s: float = 600.0
    """A session unused this long is closed."""
    sessions_per_token: int = 64
    limits: Limits = Limits()
    """The limits a run gets where its request does not say."""


class Service:
    """The state the routes share: the sandbox, sessions, admission, metrics, audit log."""

    def __init__(self, settings: Settings, sandbox) -> None:
        self.settings, self.sandbox, self.name, self.limits = settings, sandbox, settings.name, settings.limits
        self.admission = Admission(settings.per_token or settings.workers, settings.queue)
        self.sessions = native.Sessions(settings.session_idle_s, settings.sessions_per_token)
        self.threads = anyio.CapacityLimiter(settings.workers)
        self.draining = False
        self.audit_log: deque[dict] = deque(maxlen=1000)
        reg = self.registry = CollectorRegistry()
        self.m_runs = Counter("tempering_sandbox_runs", "Runs by endpoint and sandbox status", ["endpoint", "status"],
                              registry=reg)
        self.m_latency = Histogram("tempering_sandbox_run_seconds", "Request latency of runs, queueing included",
                                   ["endpoint"], registry=reg,
                                   buckets=(.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60))
        self.m_refused = Counter("tempering_sandbox_refused", "Requests refused, by reason", ["reason"], registry=reg)
        Gauge("tempering_sandbox_queue_depth", "Requests waiting for a slot", registry=reg).set_function(
            lambda: self.admission.waiting)
        Gauge("tempering_sandbox_slots_busy", "Runs going now", registry=reg).set_function(lambda: self.admission.busy)
        Gauge("tempering_sandbox_sessions_open", "Open sessions", registry=reg).set_function(lambda: len(self.sessions))

    def caller(self, request: Request) -> str:
        """The name of the request's token; 401 without a valid one."""
        if not self.settings.tokens:
            return "anonymous"
        who = token_name(self.settings.tokens, request.headers.get("authorization"))
        if who is None:
            self.m_refused.labels("auth").inc()
            given = "a wrong token" if request.headers.get("authorization") else "no token"
            raise HTTPException(401, f"{given}: send `Authorization: Bearer <token>` with a token this service "
                                     "was started with (--token-file or TEMPERING_SANDBOX_TOKEN)",
                                headers={"WWW-Authenticate": "Bearer"})
        return who

    async def blocking(self, fn: Callable):
        """Run fork-server work in a thread, at most `workers` at once."""
        return await anyio.to_thread.run_sync(fn, limiter=self.threads)

    async def execute(self, who: str, endpoint: str, fn: Callable, scored: bool = False):
        """One run behind the caller's admission slot, counted and audited."""
        t0 = time.monotonic()
        try:
            async with self.admission.slot(who):
                result = await self.blocking(fn)
        except Busy as e:
            self.m_refused.labels("busy").inc()
            raise HTTPException(429, f"too many requests: {e}; retry later or raise --per-token/--queue",
                                headers={"Retry-After": "1"}) from None
        status = result.status if isinstance(result, ExecResult) else ("passed" if result.passed else "scored")
        self.m_runs.labels(endpoint, status).inc()
        self.m_latency.labels(endpoint).observe(time.monotonic() - t0)
        if isinstance(result, ExecResult) and (result.audit or result.status not in ("ok", "error")):
            self.audit_log.append({"time": time.time(), "token": who, "endpoint": endpoint, "status": result.status,
                                   "detail": result.detail, "audit": [dict(a) for a in result.audit]})
        return result


def create_app(settings: Settings, sandbox) -> FastAPI:
    """The service over `sandbox` (a started or lazily starting tempering.sandbox.Sandbox)."""
    service = Service(settings, sandbox)
    app = FastAPI(title="Tempering sandbox", version="1",
                  description="SandboxFusion-compatible /run_code plus Tempering's native sandbox API.")
    app.state.service = service

    @app.middleware("http")
    async def guard(request: Request, call_next):
        path = request.url.path
        try:
            return await _guarded(request, call_next, path)
        except HTTPException as e:
            return JSONResponse({"detail": e.detail}, e.status_code, headers=e.headers)

    async def _guarded(request: Request, call_next, path: str):
        if service.draining and path not in OPEN_PATHS:
            service.m_refused.labels("draining").inc()
            return JSONResponse({"detail": "this replica is draining (SIGTERM): send the request to another"},
                                503, headers={"Retry-After": "1", "Connection": "close"})
        if settings.tokens and path not in OPEN_PATHS and path not in DOC_PATHS:
            service.caller(request)
        size = request.headers.get("content-length")
        if size is not None and (not size.isdigit() or int(size) > settings.max_request_bytes):
            service.m_refused.labels("too_large").inc()
            return JSONResponse({"detail": f"request body over {settings.max_request_bytes} bytes: send less "
                                           "(big inputs belong in files of a session, written one by one)"}, 413)
        if size is None and request.method in ("POST", "PUT", "PATCH"):
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > settings.max_request_bytes:
                    service.m_refused.labels("too_large").inc()
                    return JSONResponse({"detail": f"request body over {settings.max_request_bytes} bytes"}, 413)
            request._body = body  # starlette serves the buffered body to the route
        response = await call_next(request)
        response.headers["X-Tempering-Replica"] = service.name
        return response

    @app.exception_handler(SandboxInputError)
    async def bad_input(request: Request, exc: SandboxInputError):
        return JSONResponse({"detail": str(exc)}, 400)

    @app.exception_handler(fusion.RequestError)
    async def bad_fusion(request: Request, exc: fusion.RequestError):
        return JSONResponse({"detail": str(exc)}, 400)

    @app.exception_handler(OSError)
    async def workspace_failed(request: Request, exc: OSError):
        # a session's file, snapshot or restore operation failed inside its workspace
        return JSONResponse({"detail": str(exc)}, 404 if isinstance(exc, FileNotFoundError) else 409)

    @app.exception_handler(SandboxUnavailable)
    async def unavailable(request: Request, exc: SandboxUnavailable):
        return JSONResponse({"detail": str(exc)}, 503, headers={"Retry-After": "5"})

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        errors = exc.errors()
        lines = [f"{'.'.join(str(p) for p in e.get('loc', ())[1:]) or 'body'}: "
                 + ("not a field this service supports" if e.get("type") == "extra_forbidden" else e.get("msg", ""))
                 for e in errors]
        return JSONResponse({"detail": "; ".join(lines), "errors": [
            {k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]}, 422)

    @app.post("/run_code", response_model=fusion.RunCodeResponse, response_model_exclude_none=False)
    async def run_code(req: fusion.RunCodeRequest, request: Request) -> fusion.RunCodeResponse:
        who = service.caller(request)
        call, limits = fusion.to_call(req, service.limits)
        r = await service.execute(who, "run_code", lambda: service.sandbox.run(limits=limits, **call))
        return fusion.to_response(r, req.language, service.name)

    for path in fusion.UNSUPPORTED_PATHS:
        app.add_api_route(path, _unsupported(path), methods=["GET", "POST"], include_in_schema=False)

    @app.get("/v1/ping", response_class=PlainTextResponse)
    async def ping() -> str:
        return "pong"

    @app.get("/healthz")
    async def healthz() -> dict:
        return {"ok": True, "replica": service.name}

    @app.get("/readyz")
    async def readyz():
        up = getattr(sandbox, "_control", None) is not None
        if service.draining or not up:
            why = "draining" if service.draining else "the fork server is not running"
            return JSONResponse({"ready": False, "why": why}, 503)
        return {"ready": True, "replica": service.name, "slots": settings.workers, "busy": service.admission.busy}

    @app.get("/metrics")
    async def metrics(request: Request) -> Response:
        service.caller(request)
        service.sessions.expire()
        return Response(generate_latest(service.registry), media_type=CONTENT_TYPE_LATEST)

    app.include_router(native.router(service))
    return app


def _unsupported(path: str):
    async def refuse() -> JSONResponse:
        return JSONResponse({"detail": f"{path} is a SandboxFusion endpoint this service does not serve: it serves "
                                       "/run_code and /v1/ping (and the native /v1/run, /v1/sessions, /v1/verify)"},
                            404)
    return refuse
