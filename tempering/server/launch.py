"""Start `temper sandbox serve` replicas as child processes on this machine (loopback), for
benchmarks, tests and single-host fleets: `launch(dir, "r0")` returns once the replica
answers /readyz."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

START_S = 120.0
"""How long a replica may take to start: wide, for a loaded 2-core machine."""


@dataclass
class Replica:
    proc: subprocess.Popen
    url: str
    log: Path
    name: str

    def headers(self, token: str) -> dict:
        return {"Authorization": f"Bearer {token}"}

    def stop(self, sig: int = signal.SIGTERM, wait: float = START_S) -> int | None:
        """Signal it (SIGTERM drains) and wait for it to exit; SIGKILL past `wait`."""
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)  # a stopped process would never see the signal
            os.kill(self.proc.pid, sig)
            try:
                return self.proc.wait(wait)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait(wait)
        return self.proc.returncode


def launch(workdir: str | Path, name: str, *args: str, token: str | None) -> Replica:
    """One replica on a free loopback port; `token` None serves without one (--no-token)."""
    workdir = Path(workdir)
    ready, log = workdir / f"{name}.port", workdir / f"{name}.log"
    ready.unlink(missing_ok=True)
    env = {k: v for k, v in os.environ.items() if k != "TEMPERING_SANDBOX_TOKEN"}
    if token:
        env["TEMPERING_SANDBOX_TOKEN"] = token
    cmd = [sys.executable, "-c", "import sys; from tempering.cli.main import main; sys.exit(main())", "sandbox",
           "serve", "--port", "0", "--ready-file", str(ready), "--name", name, *args]
    if token is None:
        cmd.append("--no-token")
    proc = subprocess.Popen(cmd, stdout=log.open("w"), stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = time.monotonic() + START_S
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"sandbox replica {name} did not start: {log.read_text()[-2000:]}")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{ready.read_text().strip()}"
    httpx.get(url + "/readyz", timeout=START_S).raise_for_status()
    return Replica(proc, url, log, name)
