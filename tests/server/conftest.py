"""Real `temper sandbox serve` replicas on loopback, each its own process with its own fork
server, started for a test and stopped (or killed) by it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tempering.errors import SandboxUnavailable
from tempering.sandbox import Sandbox

TOKEN = "test-token-0123456789abcdef"
START_S = 120.0  # wide: a loaded 2-core machine starts Python, FastAPI and a fork server slowly


def sandbox_or_skip() -> None:
    """Skip where this machine cannot isolate runs (as tests/sandbox do), unless required."""
    try:
        Sandbox(pool_size=1).start().close()
    except SandboxUnavailable as e:
        if os.environ.get("TEMPERING_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"TEMPERING_REQUIRE_SANDBOX=1 but the sandbox is unavailable: {e}", pytrace=False)
        pytest.skip(f"sandbox unavailable on this machine ({e})")


@dataclass
class Replica:
    proc: subprocess.Popen
    url: str
    log: Path

    def headers(self, token: str = TOKEN) -> dict:
        return {"Authorization": f"Bearer {token}"}

    def stop(self, sig: int = signal.SIGTERM, wait: float = START_S) -> int | None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                return self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait(wait)
        return self.proc.returncode


def start_replica(tmp: Path, name: str, *args: str, token: str | None = TOKEN) -> Replica:
    ready = tmp / f"{name}.port"
    log = tmp / f"{name}.log"
    env = {**os.environ, "TEMPERING_SANDBOX_TOKEN": token} if token else {
        k: v for k, v in os.environ.items() if k != "TEMPERING_SANDBOX_TOKEN"}
    cmd = [sys.executable, "-c", "import sys; from tempering.cli.main import main; sys.exit(main())", "sandbox",
           "serve", "--port", "0", "--ready-file", str(ready), "--name", name, *args]
    if token is None:
        cmd.append("--no-token")
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + START_S
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"replica {name} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{ready.read_text().strip()}"
    httpx.get(url + "/readyz", timeout=START_S).raise_for_status()
    return Replica(proc, url, log)


@pytest.fixture
def replicas(tmp_path):
    """Factory: replicas(n, *serve_args, token=TOKEN) -> [Replica]; all stopped at the end."""
    sandbox_or_skip()
    made: list[Replica] = []

    def make(n: int = 1, *args: str, token: str | None = TOKEN) -> list[Replica]:
        new = [start_replica(tmp_path, f"r{len(made) + i}", *args, token=token) for i in range(n)]
        made.extend(new)
        return new

    yield make
    for r in made:
        if r.proc.poll() is None:
            os.kill(r.proc.pid, signal.SIGCONT)  # a test may have stopped it
        r.stop(signal.SIGTERM)
