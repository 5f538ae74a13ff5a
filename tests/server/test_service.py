"""`temper sandbox serve`: authentication, abuse limits, the native API, metrics, the drain."""

from __future__ import annotations

import base64
import signal
import threading

import httpx
import pytest

from tempering.errors import ConfigError
from tempering.server.admission import read_tokens, token_name
from tempering.server.serve import serve

from .conftest import TOKEN, auth

T = 120.0  # harness timeout: wide, never a measurement


def wait_busy(r, n: int) -> None:
    """Until the replica reports `n` runs going (its /metrics gauge)."""
    while f"tempering_sandbox_slots_busy {float(n)}" not in httpx.get(r.url + "/metrics", headers=auth(),
                                                                      timeout=T).text:
        pass


def test_auth_refuses_no_token_and_wrong_token(replicas):
    r = replicas(1)[0]
    body = {"code": "print(1)", "language": "python"}
    assert httpx.post(r.url + "/run_code", json=body, timeout=T).status_code == 401
    bad = httpx.post(r.url + "/run_code", json=body, headers=auth("wrong-token-0123456789"), timeout=T)
    assert bad.status_code == 401 and "wrong token" in bad.json()["detail"]
    assert httpx.post(r.url + "/v1/run", json={"code": "print(1)"}, timeout=T).status_code == 401
    assert httpx.get(r.url + "/metrics", timeout=T).status_code == 401
    ok = httpx.post(r.url + "/run_code", json=body, headers=auth(), timeout=T)
    assert ok.status_code == 200 and ok.json()["run_result"]["stdout"] == "1\n"
    assert ok.headers["X-Tempering-Replica"] == "r0"
    assert httpx.get(r.url + "/healthz", timeout=T).status_code == 200  # probes need no token


def test_oversized_request_refused(replicas):
    r = replicas(1, "--max-request-mb", "0.01")[0]
    big = {"code": "x = 1\n" + "#" * 20_000, "language": "python"}
    resp = httpx.post(r.url + "/run_code", json=big, headers=auth(), timeout=T)
    assert resp.status_code == 413
    chunked = httpx.post(r.url + "/v1/run", content=iter([b'{"code": "', b"#" * 20_000, b'"}']),
                         headers={**auth(), "Content-Type": "application/json"}, timeout=T)
    assert chunked.status_code == 413


def test_queue_full_gets_429_with_retry_after(replicas):
    r = replicas(1, "--per-token", "1", "--queue", "0")[0]
    started = threading.Event()
    results = []

    def slow():
        started.set()
        results.append(httpx.post(r.url + "/v1/run", json={"code": "import time; time.sleep(3)"},
                                  headers=auth(), timeout=T).status_code)

    t = threading.Thread(target=slow)
    t.start()
    started.wait()
    wait_busy(r, 1)  # the slow run holds the token's only slot now
    busy = httpx.post(r.url + "/v1/run", json={"code": "print(1)"}, headers=auth(), timeout=T)
    t.join()
    assert busy.status_code == 429 and int(busy.headers["Retry-After"]) >= 1
    assert results == [200]
    metrics = httpx.get(r.url + "/metrics", headers=auth(), timeout=T).text
    assert 'tempering_sandbox_refused_total{reason="busy"}' in metrics


def test_native_run_session_verify_and_audit(replicas, tmp_path):
    (tmp_path / "tokens").write_text("bob " + "b" * 20 + "\n")
    r = replicas(1, "--token-file", str(tmp_path / "tokens"))[0]
    h = auth()
    out = httpx.post(r.url + "/v1/run", json={"code": "import sys; sys.stdout.buffer.write(bytes([0, 255]))",
                                             "limits": {"wall_s": 5}}, headers=h, timeout=T).json()
    assert out["status"] == "ok" and base64.b64decode(out["stdout_b64"]) == b"\x00\xff"
    bad = httpx.post(r.url + "/v1/run", json={"code": "1", "limits": {"gpu": 1}}, headers=h, timeout=T)
    assert bad.status_code == 400 and "gpu" in bad.json()["detail"]

    sid = httpx.post(r.url + "/v1/sessions", json={"language": "bash"}, headers=h, timeout=T).json()["id"]
    s = f"{r.url}/v1/sessions/{sid}"
    assert httpx.put(s + "/file", json={"path": "a.txt", "data": base64.b64encode(b"one").decode()}, headers=h,
                     timeout=T).status_code == 200
    snap = httpx.post(s + "/snapshot", headers=h, timeout=T).json()["snapshot"]
    assert httpx.post(s + "/run", json={"code": "echo two > a.txt"}, headers=h, timeout=T).json()["status"] == "ok"
    got = httpx.get(s + "/file", params={"path": "a.txt"}, headers=h, timeout=T).json()
    assert base64.b64decode(got["data"]) == b"two\n"
    httpx.post(s + "/restore", json={"snapshot": snap}, headers=h, timeout=T).raise_for_status()
    ran = httpx.post(s + "/run", json={"code": "cat a.txt"}, headers=h, timeout=T).json()
    assert ran["stdout"] == "one"
    # another valid token cannot use it
    assert httpx.post(s + "/run", json={"code": "cat a.txt"}, headers=auth("b" * 20), timeout=T).status_code == 404
    assert httpx.delete(s, headers=h, timeout=T).status_code == 200
    assert httpx.post(s + "/run", json={"code": "true"}, headers=h, timeout=T).status_code == 404

    task = {"id": "add", "entry_point": "add", "prompt": 'def add(a, b):\n    """a + b"""\n', "cases": [{"args": [1, 2], "expected": 3}]}
    good = httpx.post(r.url + "/v1/verify", json={"task": task, "solution": "def add(a, b):\n    return a + b\n"},
                      headers=h, timeout=T).json()
    wrong = httpx.post(r.url + "/v1/verify", json={"task": task, "solution": "def add(a, b):\n    return a - b\n"},
                       headers=h, timeout=T).json()
    assert good["passed"] and good["reward"] == 1.0 and not wrong["passed"]

    net = httpx.post(r.url + "/v1/run", json={"code": "import socket; socket.socket().connect(('1.1.1.1', 53))"},
                     headers=h, timeout=T).json()
    assert {"kind": "network", "detail": "connect to 1.1.1.1:53", "count": 1} in net["audit"]
    entries = httpx.get(r.url + "/v1/audit", headers=h, timeout=T).json()["entries"]
    assert entries[-1]["audit"] == net["audit"] and entries[-1]["token"] == "env"


def test_sigterm_drain_finishes_in_flight_and_refuses_new(replicas):
    r = replicas(1)[0]
    answers = []
    started = threading.Event()

    def long_run():
        started.set()
        answers.append(httpx.post(r.url + "/v1/run", json={"code": "import time; time.sleep(4); print('done')"},
                                  headers=auth(), timeout=T))

    t = threading.Thread(target=long_run)
    t.start()
    started.wait()
    wait_busy(r, 1)  # the run is in flight
    r.proc.send_signal(signal.SIGTERM)
    refused = None
    while r.proc.poll() is None and refused is None:
        try:
            resp = httpx.post(r.url + "/v1/run", json={"code": "print(1)"}, headers=auth(), timeout=T)
            if resp.status_code == 503:
                refused = "503"
        except httpx.TransportError:
            refused = "connection refused"
    t.join()
    assert answers[0].status_code == 200 and answers[0].json()["stdout"] == "done\n"
    assert refused in ("503", "connection refused")
    assert r.proc.wait(T) == 0


def test_tokens_and_loopback_rules(tmp_path):
    f = tmp_path / "tokens"
    f.write_text("# fleet\nalice aaaaaaaaaaaaaaaaaaaa\nbbbbbbbbbbbbbbbbbbbb\n")
    tokens = read_tokens(f, None)
    assert tokens == {"aaaaaaaaaaaaaaaaaaaa": "alice", "bbbbbbbbbbbbbbbbbbbb": "token2"}
    assert token_name(tokens, "Bearer aaaaaaaaaaaaaaaaaaaa") == "alice"
    basic = base64.b64encode(b"any:bbbbbbbbbbbbbbbbbbbb").decode()
    assert token_name(tokens, f"Basic {basic}") == "token2"
    assert token_name(tokens, "Bearer aaaa") is None and token_name(tokens, None) is None
    f.write_text("short\n")
    with pytest.raises(ConfigError, match="at least 16"):
        read_tokens(f, None)
    with pytest.raises(ConfigError, match="loopback only"):
        serve(host="0.0.0.0", no_token=True)
    with pytest.raises(ConfigError, match="no token"):
        serve(host="127.0.0.1")
    assert TOKEN  # the fixtures' token is long enough for read_tokens
    assert len(read_tokens(None, TOKEN)) == 1
