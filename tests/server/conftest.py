"""Real `temper sandbox serve` replicas on loopback, each its own process with its own fork
server, started for a test and stopped (or killed) by it."""

from __future__ import annotations

import os

import pytest

from tempering.errors import SandboxUnavailable
from tempering.sandbox import Sandbox
from tempering.server.launch import launch

TOKEN = "test-token-0123456789abcdef"


def sandbox_or_skip() -> None:
    """Skip where this machine cannot isolate runs (as tests/sandbox do), unless required."""
    try:
        Sandbox(pool_size=1).start().close()
    except SandboxUnavailable as e:
        if os.environ.get("TEMPERING_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"TEMPERING_REQUIRE_SANDBOX=1 but the sandbox is unavailable: {e}", pytrace=False)
        pytest.skip(f"sandbox unavailable on this machine ({e})")


@pytest.fixture
def replicas(tmp_path):
    """Factory: replicas(n, *serve_args, token=TOKEN) -> [Replica]; all stopped at the end."""
    sandbox_or_skip()
    made = []

    def make(n: int = 1, *args: str, token: str | None = TOKEN) -> list:
        new = [launch(tmp_path, f"r{len(made) + i}", *args, token=token) for i in range(n)]
        made.extend(new)
        return new

    yield make
    for r in made:
        r.stop()


def auth(token: str = TOKEN) -> dict:
    return {"Authorization": f"Bearer {token}"}
