"""Who may run, and how many at once: bearer tokens, per-token slots, a bounded queue.

A token is a secret string; its name (from the token file, or its position) is what logs
and metrics show. Each token may hold `per_token` runs at once and keep `queue` more
waiting; a request past that is refused at once (429 with Retry-After) instead of piling
up until every client times out, the failure SandboxFusion's users report under load.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hmac
from contextlib import asynccontextmanager
from pathlib import Path

from tempering.errors import ConfigError


class Busy(Exception):
    """This token already has its slots and its queue full."""


def read_tokens(path: str | Path | None, env_value: str | None) -> dict[str, str]:
    """token -> name, from a file (one token per line, or `name token`; # comments) and/or
    the value of TEMPERING_SANDBOX_TOKEN."""
    tokens: dict[str, str] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise ConfigError(f"no such token file: {path} (one token per line, optionally `name token`)")
        for i, line in enumerate(p.read_text().splitlines(), 1):
            parts = line.split("#", 1)[0].split()
            if not parts:
                continue
            if len(parts) > 2:
                raise ConfigError(f"{path}:{i}: a line is `token` or `name token`, got {len(parts)} words")
            name, token = (parts[0], parts[1]) if len(parts) == 2 else (f"token{len(tokens) + 1}", parts[0])
            tokens[token] = name
    if env_value:
        tokens[env_value.strip()] = "env"
    for token in tokens:
        if len(token) < 16:
            raise ConfigError(f"token {tokens[token]!r} is {len(token)} characters: use at least 16 "
                              "(e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    return tokens


def token_name(tokens: dict[str, str], authorization: str | None) -> str | None:
    """The name of the token an Authorization header carries, or None. Bearer, or Basic with
    the token as password (what `requests` sends from ~/.netrc, so SandboxFusion's client
    authenticates without a code change)."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    value = value.strip()
    if scheme.lower() == "basic":
        try:
            value = base64.b64decode(value, validate=True).decode().partition(":")[2]
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return None
    elif scheme.lower() != "bearer":
        return None
    for token, name in tokens.items():  # compare every token in constant time
        if hmac.compare_digest(token.encode(), value.encode()):
            return name
    return None


class Admission:
    """Per-token concurrency with a bounded queue (module docstring)."""

    def __init__(self, per_token: int, queue: int) -> None:
        self.per_token, self.queue = per_token, queue
        self._sems: dict[str, asyncio.Semaphore] = {}
        self._waiting: dict[str, int] = {}
        self.busy = 0

    @property
    def waiting(self) -> int:
        return sum(self._waiting.values())

    @asynccontextmanager
    async def slot(self, who: str):
        sem = self._sems.setdefault(who, asyncio.Semaphore(self.per_token))
        if sem.locked():
            if self._waiting.get(who, 0) >= self.queue:
                raise Busy(f"{who} has {self.per_token} runs going and {self.queue} waiting")
            self._waiting[who] = self._waiting.get(who, 0) + 1
            try:
                await sem.acquire()
            finally:
                self._waiting[who] -= 1
        else:
            await sem.acquire()
        self.busy += 1
        try:
            yield
        finally:
            self.busy -= 1
            sem.release()
