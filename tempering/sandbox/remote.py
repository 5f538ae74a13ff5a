"""The sandbox over the network: `SandboxPool(urls)` is a `Sandbox` whose runs go to a pool of
`temper sandbox serve` replicas (tempering/server/).

    pool = SandboxPool(["http://10.0.0.5:8080", "http://10.0.0.6:8080"], token="...")
    pool.run("print(1)")                     # ExecResult, as Sandbox.run gives
    with pool.session("bash") as s: ...      # pinned to one replica

- Least loaded: a run goes to the healthy replica with the fewest runs in flight from
  this process (ties: the next in turn).
- Retried: a one-shot run starts in a fresh workspace, so repeating it is safe. A run
  whose replica refused the connection, timed out, answered 5xx or 429, or reported
  `sandbox_error` is sent again (to another replica where there is one) with jittered
  backoff, up to `retries` more times; then it comes back as `sandbox_error`, which the
  trainer counts as an infrastructure failure, never as the model's.
- A circuit breaker per replica: `breaker_failures` failures in a row open it for
  `breaker_open_s`; then one run probes it (half-open). A hung replica is cut this way
  after its first timeouts instead of holding every run.
- A session stays on the replica that opened it (its workspace lives there). If that
  replica is lost, the session's runs come back `sandbox_error` and its file calls raise
  `SandboxUnavailable`, with the replica named: never silently moved, never retried.

What is not covered: load others put on the replicas (balancing sees only this process's
runs); replicas added while running (build a new pool).
"""

from __future__ import annotations

import base64
import os
import random
import threading
import time
from dataclasses import dataclass, field

import httpx

from ..errors import SandboxInputError, SandboxUnavailable
from ..types import ExecResult
from .limits import Limits

GRACE_S = 15.0
"""How much longer than a run's own limits the client waits for the replica's answer."""


@dataclass
class Replica:
    url: str
    inflight: int = 0
    failures: int = 0
    """Failures in a row (reset by any success)."""
    open_until: float = 0.0
    probing: bool = False
    stats: dict = field(default_factory=lambda: {"runs": 0, "failures": 0, "retried": 0})

    def usable(self, now: float) -> bool:
        return now >= self.open_until and not self.probing


class Retryable(Exception):
    """This attempt failed for a reason another attempt may not hit."""


class SandboxPool:
    """A Sandbox whose runs go to remote replicas (module docstring). Thread-safe."""

    def __init__(self, urls: list[str] | tuple[str, ...], token: str | None = None, limits: Limits | None = None,
                 retries: int = 3, breaker_failures: int = 3, breaker_open_s: float = 10.0,
                 grace_s: float = GRACE_S, transport: httpx.BaseTransport | None = None) -> None:
        if not urls:
            raise SandboxInputError("a sandbox pool needs at least one replica URL (sandbox.urls)")
        self.replicas = [Replica(u.rstrip("/")) for u in urls]
        self.limits = limits or Limits()
        self.retries, self.breaker_failures, self.breaker_open_s, self.grace_s = (
            retries, breaker_failures, breaker_open_s, grace_s)
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(headers=headers, transport=transport,
                                  limits=httpx.Limits(max_connections=256, max_keepalive_connections=64))
        self._lock = threading.Lock()
        self._turn = 0

    # -- the Sandbox interface

    def start(self) -> "SandboxPool":
        return self

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "SandboxPool":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, code: str, language: str = "python", stdin: str | bytes = "",
            files: dict[str, str | bytes] | None = None, limits: Limits | None = None,
            fetch: list[str] | tuple[str, ...] = (), *, trace: bool = False) -> ExecResult:
        lim = limits or self.limits
        body = _run_body(code, language, stdin, files, lim)
        body["fetch"] = list(fetch)
        timeout = lim.total_wall_s(compiled=language in ("c", "cpp")) + self.grace_s
        last = "no replica answered"
        t0 = time.monotonic()
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(min(2.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
            replica = self._pick()
            if replica is None:
                last = "every replica's circuit breaker is open (each failed repeatedly)"
                continue
            try:
                result = self._call(replica, "POST", "/v1/run", body, timeout)
            except Retryable as e:
                last = f"{replica.url}: {e}"
                replica.stats["retried"] += 1
                continue
            return ExecResult.from_json(result)
        return ExecResult("sandbox_error", None, "", "", time.monotonic() - t0, 0.0, 0.0,
                          detail=f"sandbox pool: gave up after {self.retries + 1} attempts; last: {last}")

    def session(self, language: str = "bash", limits: Limits | None = None) -> "RemoteSession":
        lim = limits or self.limits
        last = ""
        for _ in range(self.retries + 1):
            replica = self._pick()
            if replica is None:
                last = "every replica's circuit breaker is open"
                continue
            try:
                reply = self._call(replica, "POST", "/v1/sessions", {"language": language, "limits": _limits_json(lim)},
                                   30.0)
            except Retryable as e:
                last = f"{replica.url}: {e}"
                continue
            return RemoteSession(self, replica, reply["id"], language, lim)
        raise SandboxUnavailable(f"could not open a sandbox session on any replica ({last}); check that "
                                 "`temper sandbox serve` runs at sandbox.urls and the token is right")

    def stats(self) -> dict[str, dict]:
        return {r.url: dict(r.stats, inflight=r.inflight, open=r.open_until > time.monotonic())
                for r in self.replicas}

    # -- balancing, breaking, calling

    def _pick(self) -> Replica | None:
        now = time.monotonic()
        with self._lock:
            usable = [r for r in self.replicas if r.usable(now)]
            if not usable:
                return None
            self._turn += 1
            least = min(r.inflight for r in usable)
            tied = [r for r in usable if r.inflight == least]
            chosen = tied[self._turn % len(tied)]
            if chosen.open_until:  # half-open: this run is the probe
                chosen.probing = True
            chosen.inflight += 1
            return chosen

    def _done(self, replica: Replica, ok: bool) -> None:
        with self._lock:
            replica.inflight -= 1
            replica.probing = False
            replica.stats["runs"] += 1
            if ok:
                replica.failures, replica.open_until = 0, 0.0
                return
            replica.stats["failures"] += 1
            replica.failures += 1
            if replica.failures >= self.breaker_failures or replica.open_until:
                replica.open_until = time.monotonic() + self.breaker_open_s

    def _call(self, replica: Replica, method: str, path: str, body: dict | None, timeout: float,
              pinned: bool = False) -> dict:
        """One request; Retryable for what another attempt may not hit, SandboxInputError for a
        request the service refused as malformed. `pinned` calls (sessions) skip balancing."""
        if pinned:
            with self._lock:
                replica.inflight += 1
        ok = False
        try:
            resp = self._http.request(method, replica.url + path, json=body,
                                      timeout=httpx.Timeout(timeout, connect=5.0))
            if resp.status_code in (429, 503) or resp.status_code >= 500:
                raise Retryable(f"HTTP {resp.status_code}: {_detail(resp)}")
            if resp.status_code in (401, 403):
                raise SandboxUnavailable(f"{replica.url} refused the token ({_detail(resp)}): set sandbox.token_file "
                                         "or TEMPERING_SANDBOX_TOKEN to a token the service was started with")
            if resp.status_code == 404 and pinned:
                raise SandboxUnavailable(f"{replica.url} no longer has this session ({_detail(resp)})")
            if resp.status_code == 409:  # the operation failed in the workspace (as Session raises OSError)
                ok = True
                raise OSError(_detail(resp))
            if resp.status_code >= 400:
                ok = True  # the replica worked; the request was wrong
                raise SandboxInputError(f"the sandbox service refused the request: {_detail(resp)}")
            data = resp.json()
            if not pinned and isinstance(data, dict) and data.get("status") == "sandbox_error":
                raise Retryable(f"sandbox_error: {data.get('detail', '')}")
            ok = True
            return data
        except httpx.TransportError as e:  # refused, reset, timed out: the replica, not the code
            raise Retryable(f"{type(e).__name__}: {e}") from None
        except ValueError as e:
            if isinstance(e, SandboxInputError):
                raise
            raise Retryable(f"malformed reply ({e})") from None
        finally:
            self._done(replica, ok)


class RemoteSession:
    """A Session on one replica (module docstring: pinned, never moved)."""

    def __init__(self, pool: SandboxPool, replica: Replica, sid: str, language: str, limits: Limits) -> None:
        self.pool, self.replica, self.id, self.language, self.limits = pool, replica, sid, language, limits
        self.closed = False

    def _lost(self, e: Exception) -> SandboxUnavailable:
        return SandboxUnavailable(f"sandbox session {self.id} was lost with its replica {self.replica.url} ({e}); "
                                  "a session lives on one replica and cannot move")

    def run(self, code: str, stdin: str | bytes = "", language: str | None = None, limits: Limits | None = None,
            files: dict | None = None, *, workdir: str | None = None, scratch: tuple[str, ...] = ()) -> ExecResult:
        self._check_open()
        lim = limits or self.limits
        body = _run_body(code, language or self.language, stdin, files, lim)
        body.update(language=language, workdir=workdir, scratch=list(scratch))
        t0 = time.monotonic()
        timeout = lim.total_wall_s(compiled=(language or self.language) in ("c", "cpp")) + self.pool.grace_s
        try:
            return ExecResult.from_json(self.pool._call(self.replica, "POST", f"/v1/sessions/{self.id}/run", body,
                                                        timeout, pinned=True))
        except (Retryable, SandboxUnavailable) as e:
            return ExecResult("sandbox_error", None, "", "", time.monotonic() - t0, 0.0, 0.0, detail=str(self._lost(e)))

    def _pinned(self, method: str, path: str, body: dict | None = None) -> dict:
        self._check_open()
        try:
            return self.pool._call(self.replica, method, f"/v1/sessions/{self.id}{path}", body, 60.0, pinned=True)
        except (Retryable, SandboxUnavailable) as e:
            raise self._lost(e) from None

    def write_file(self, path: str, data: str | bytes) -> None:
        raw = data.encode() if isinstance(data, str) else bytes(data)
        self._pinned("PUT", "/file", {"path": path, "data": base64.b64encode(raw).decode()})

    def read_file(self, path: str) -> bytes:
        self._check_open()
        try:
            resp = self.pool._http.get(f"{self.replica.url}/v1/sessions/{self.id}/file", params={"path": path},
                                       timeout=60.0)
        except httpx.TransportError as e:
            raise self._lost(e) from None
        if resp.status_code == 404 and "could not be read" in resp.text:
            raise FileNotFoundError(_detail(resp))
        if resp.status_code == 400:
            raise SandboxInputError(_detail(resp))
        if resp.status_code == 409:
            raise OSError(_detail(resp))
        if resp.status_code != 200:
            raise self._lost(RuntimeError(f"HTTP {resp.status_code}: {_detail(resp)}"))
        return base64.b64decode(resp.json()["data"])

    def snapshot(self) -> int:
        return int(self._pinned("POST", "/snapshot")["snapshot"])

    def restore(self, snapshot: int) -> None:
        self._pinned("POST", "/restore", {"snapshot": int(snapshot)})

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            self.pool._http.delete(f"{self.replica.url}/v1/sessions/{self.id}", timeout=10.0)
        except httpx.TransportError:
            pass  # the replica is gone, and the session with it

    def _check_open(self) -> None:
        if self.closed:
            raise SandboxInputError("this session is closed")

    def __enter__(self) -> "RemoteSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def use_config(cfg) -> None:
    """Point this process's (and its children's, Ray workers' included) `shared_sandbox` at
    `cfg.sandbox.urls`; nothing changes when it is empty."""
    from pathlib import Path

    from ..errors import ConfigError
    from . import client

    sb = cfg.sandbox
    if not sb.urls:
        return
    bad = [u for u in sb.urls if not str(u).startswith(("http://", "https://"))]
    if bad:
        raise ConfigError(f"sandbox.urls must be http(s) URLs of `temper sandbox serve` replicas, got {bad}")
    if sb.retries < 0:
        raise ConfigError(f"sandbox.retries must be >= 0, got {sb.retries}")
    os.environ["TEMPERING_SANDBOX_URLS"] = ",".join(sb.urls)
    os.environ["TEMPERING_SANDBOX_RETRIES"] = str(sb.retries)
    if sb.token_file:
        path = Path(sb.token_file).expanduser()
        if not path.is_file():
            raise ConfigError(f"sandbox.token_file {sb.token_file!r} does not exist: give the file holding the "
                              "replicas' token (or set TEMPERING_SANDBOX_TOKEN)")
        lines = [ln.split("#", 1)[0].split() for ln in path.read_text().splitlines()]
        lines = [w for w in lines if w]
        if not lines:
            raise ConfigError(f"sandbox.token_file {sb.token_file!r} holds no token")
        os.environ["TEMPERING_SANDBOX_TOKEN"] = lines[0][-1]  # `token` or `name token`, as the service reads it
    with client._shared_lock:
        if client._shared is not None and not isinstance(client._shared, SandboxPool):
            client._shared.close()
            client._shared = None


def _run_body(code, language, stdin, files, lim: Limits) -> dict:
    raw = stdin.encode() if isinstance(stdin, str) else bytes(stdin)
    enc = {p: base64.b64encode(v.encode() if isinstance(v, str) else bytes(v)).decode() for p, v in (files or {}).items()}
    return {"code": code, "language": language, "stdin_b64": base64.b64encode(raw).decode(), "files": enc,
            "limits": _limits_json(lim)}


def _limits_json(lim: Limits) -> dict:
    return {k: v for k, v in lim.as_dict().items() if k != "network"}  # network is always off


def _detail(resp: httpx.Response) -> str:
    try:
        return str(resp.json().get("detail", resp.text))[:300]
    except ValueError:
        return resp.text[:300]
