"""SandboxFusion's own PyPI client, unchanged, against `temper sandbox serve`: its documented
example requests, its status meanings, and its authentication through ~/.netrc."""

from __future__ import annotations

import base64

import httpx
import pytest

sf = pytest.importorskip("sandbox_fusion", reason="the sandbox-fusion client is a dev dependency (make setup)")
from sandbox_fusion import RunCodeRequest, RunStatus, run_code  # noqa: E402
from sandbox_fusion.models import CommandRunStatus  # noqa: E402

from .conftest import TOKEN  # noqa: E402


@pytest.fixture
def open_replica(replicas):
    return replicas(1, token=None)[0]


def test_fusion_client_examples(open_replica):
    url = open_replica.url
    r = run_code(RunCodeRequest(code='print("Hello, world!")', language="python"), endpoint=url, max_attempts=1)
    assert r.status == RunStatus.Success and r.run_result.stdout == "Hello, world!\n"
    assert r.run_result.status == CommandRunStatus.Finished and r.run_result.return_code == 0
    assert r.executor_pod_name == "r0"

    cpp = '#include <iostream>\nint main() { int a; std::cin >> a; std::cout << a * 2 << std::endl; return 0; }'
    r = run_code(RunCodeRequest(code=cpp, language="cpp", stdin="21"), endpoint=url, max_attempts=1)
    assert r.status == RunStatus.Success and r.run_result.stdout.strip() == "42"
    assert r.compile_result.status == CommandRunStatus.Finished and r.compile_result.return_code == 0

    r = run_code(RunCodeRequest(code="int main() { retur 0; }", language="cpp"), endpoint=url, max_attempts=1)
    assert r.status == RunStatus.Failed and r.run_result is None
    assert r.compile_result.return_code != 0 and "retur" in r.compile_result.stderr

    r = run_code(RunCodeRequest(code="import sys; sys.exit(3)", language="python"), endpoint=url, max_attempts=1)
    assert r.status == RunStatus.Failed and r.run_result.return_code == 3

    r = run_code(RunCodeRequest(code="while True: pass", language="python", run_timeout=1), endpoint=url,
                 max_attempts=1)
    assert r.status == RunStatus.Failed and r.run_result.status == CommandRunStatus.TimeLimitExceeded

    r = run_code(RunCodeRequest(code="cat a.txt | tr a-z A-Z > b.txt", language="bash",
                                files={"a.txt": base64.b64encode(b"hello").decode()}, fetch_files=["b.txt"]),
                 endpoint=url, max_attempts=1)
    assert r.status == RunStatus.Success and base64.b64decode(r.files["b.txt"]) == b"HELLO"


def test_fusion_request_json_as_verl_sends_it(open_replica):
    """verl's sandbox_fusion reward posts this JSON with requests; memory_limit_MB included."""
    body = {"code": "print(input())", "stdin": "7", "compile_timeout": 10, "run_timeout": 10,
            "memory_limit_MB": 256, "language": "python", "files": {}, "fetch_files": []}
    r = httpx.post(open_replica.url + "/run_code", json=body, timeout=60)
    assert r.status_code == 200 and r.json()["status"] == "Success" and r.json()["run_result"]["stdout"] == "7\n"
    body["code"] = "x = bytearray(400 * 2**20)"
    r = httpx.post(open_replica.url + "/run_code", json=body, timeout=60).json()
    assert r["status"] == "Failed" and r["run_result"]["return_code"] != 0


def test_fusion_unsupported_is_named(open_replica):
    url = open_replica.url
    r = httpx.post(url + "/run_code", json={"code": "x", "language": "go"}, timeout=60)
    assert r.status_code == 400 and "'go'" in r.json()["detail"] and "python" in r.json()["detail"]
    r = httpx.post(url + "/run_code", json={"code": "x", "language": "python", "gpu": True}, timeout=60)
    assert r.status_code == 422 and r.json()["detail"].startswith("gpu:")
    r = httpx.post(url + "/run_jupyter", json={"cells": ["1"]}, timeout=60)
    assert r.status_code == 404 and "/run_jupyter" in r.json()["detail"]
    r = httpx.post(url + "/run_code", json={"code": "x", "language": "python", "files": {"a": "%%%"}}, timeout=60)
    assert r.status_code == 400 and "files['a']" in r.json()["detail"]
    assert httpx.get(url + "/v1/ping", timeout=60).text == "pong"


def test_fusion_client_authenticates_through_netrc(replicas, tmp_path, monkeypatch):
    """requests reads ~/.netrc for a host the caller gave no auth: the token as password."""
    replica = replicas(1)[0]
    req = RunCodeRequest(code="print(2)", language="python")
    with pytest.raises(Exception, match="401"):
        run_code(req, endpoint=replica.url, max_attempts=1)
    netrc = tmp_path / "netrc"
    netrc.write_text(f"machine 127.0.0.1 login tempering password {TOKEN}\n")
    netrc.chmod(0o600)
    monkeypatch.setenv("NETRC", str(netrc))
    assert run_code(req, endpoint=replica.url, max_attempts=1).run_result.stdout == "2\n"
