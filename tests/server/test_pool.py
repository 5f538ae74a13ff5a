"""`SandboxPool` over real replicas: balance, faults (SIGKILL, SIGSTOP), pinned sessions,
and the config switch that sends every env's runs to the pool."""

from __future__ import annotations

import os
import signal
from concurrent.futures import ThreadPoolExecutor

import pytest

from tempering.config import Config
from tempering.config.schema import SandboxConfig
from tempering.errors import ConfigError, SandboxInputError, SandboxUnavailable
from tempering.sandbox import Limits, client
from tempering.sandbox.remote import SandboxPool, use_config

from .conftest import TOKEN

PROGRAM = "import sys; n = int(sys.stdin.read()); print(n * n)"


def square_all(pool: SandboxPool, n: int, threads: int = 16, on_half=None) -> list:
    def one(i):
        if i == n // 2 and on_half:
            on_half()
        return i, pool.run(PROGRAM, stdin=str(i))
    with ThreadPoolExecutor(threads) as ex:
        return list(ex.map(one, range(n)))


def test_runs_spread_over_replicas_and_come_back_right(replicas):
    a, b = replicas(2)
    with SandboxPool([a.url, b.url], token=TOKEN) as pool:
        results = square_all(pool, 200)
        assert all(r.status == "ok" and r.stdout == f"{i * i}\n" for i, r in results)
        runs = [s["runs"] for s in pool.stats().values()]
        assert min(runs) > 0 and sum(runs) == 200


def test_replica_killed_mid_load_loses_no_run(replicas):
    a, b = replicas(2)
    with SandboxPool([a.url, b.url], token=TOKEN, retries=3) as pool:
        results = square_all(pool, 300, on_half=lambda: os.kill(a.proc.pid, signal.SIGKILL))
    wrong = [(i, r) for i, r in results if r.status == "ok" and r.stdout != f"{i * i}\n"]
    failed = [(i, r) for i, r in results if r.status != "ok"]
    assert wrong == []
    # every run was retried onto the live replica; none came back as a failure
    assert failed == [], failed[:3]
    assert pool.stats()[a.url]["failures"] > 0 or pool.stats()[a.url]["runs"] < 150


def test_hung_replica_is_cut_by_the_breaker(replicas):
    a, b = replicas(2)
    os.kill(a.proc.pid, signal.SIGSTOP)
    try:
        with SandboxPool([a.url, b.url], token=TOKEN, retries=2, breaker_failures=1, breaker_open_s=600,
                         grace_s=2.0, limits=Limits(wall_s=2, cpu_s=2)) as pool:
            results = square_all(pool, 20, threads=4)
            assert all(r.status == "ok" and r.stdout == f"{i * i}\n" for i, r in results)
            stats = pool.stats()
            assert stats[a.url]["open"] and stats[a.url]["failures"] >= 1
            assert stats[b.url]["runs"] >= 20
    finally:
        os.kill(a.proc.pid, signal.SIGCONT)


def test_session_is_pinned_and_its_loss_is_loud(replicas):
    a, b = replicas(2)
    with SandboxPool([a.url, b.url], token=TOKEN) as pool:
        s = pool.session("bash")
        s.write_file("n.txt", "41")
        assert s.run("echo $(( $(cat n.txt) + 1 ))").stdout == "42\n"
        snap = s.snapshot()
        s.run("echo 0 > n.txt")
        s.restore(snap)
        assert s.read_file("n.txt") == b"41"
        with pytest.raises(FileNotFoundError):
            s.read_file("missing.txt")
        home = a if s.replica.url == a.url else b
        os.kill(home.proc.pid, signal.SIGKILL)
        home.proc.wait(60)
        lost = s.run("cat n.txt")
        assert lost.status == "sandbox_error" and home.url in lost.detail and "cannot move" in lost.detail
        with pytest.raises(SandboxUnavailable, match="lost with its replica"):
            s.write_file("n.txt", "1")
        # one-shot runs still go to the replica that lives
        assert pool.run("print(5)").stdout == "5\n"


def test_all_replicas_gone_is_sandbox_error_not_a_wrong_answer(replicas):
    (a,) = replicas(1)
    a.stop(signal.SIGKILL)
    with SandboxPool([a.url], token=TOKEN, retries=1) as pool:
        r = pool.run("print(1)")
    assert r.status == "sandbox_error" and "gave up after 2 attempts" in r.detail


def test_bad_token_and_bad_request_are_clear(replicas):
    (a,) = replicas(1)
    with SandboxPool([a.url], token="wrong-token-0123456789") as pool:
        with pytest.raises(SandboxUnavailable, match="refused the token"):
            pool.run("print(1)")
    with SandboxPool([a.url], token=TOKEN) as pool:
        with pytest.raises(SandboxInputError, match="language"):
            pool.run("x", language="cobol")


def test_config_switch_sends_shared_sandbox_to_the_pool(replicas, tmp_path, monkeypatch):
    (a,) = replicas(1)
    for k in ("TEMPERING_SANDBOX_URLS", "TEMPERING_SANDBOX_TOKEN", "TEMPERING_SANDBOX_RETRIES"):
        monkeypatch.setenv(k, "")  # so that what use_config sets is undone after the test
        monkeypatch.delenv(k)
    monkeypatch.setattr(client, "_shared", None)
    tokens = tmp_path / "tokens"
    tokens.write_text(f"trainer {TOKEN}\n")
    cfg = Config(sandbox=SandboxConfig(urls=(a.url,), token_file=str(tokens)))
    use_config(cfg)
    box = client.shared_sandbox()
    try:
        assert isinstance(box, SandboxPool) and box.run("print(3)").stdout == "3\n"
        assert os.environ["TEMPERING_SANDBOX_URLS"] == a.url  # Ray workers inherit it
    finally:
        box.close()
        monkeypatch.setattr(client, "_shared", None)
    with pytest.raises(ConfigError, match="http"):
        use_config(Config(sandbox=SandboxConfig(urls=("10.0.0.5:8080",))))
    with pytest.raises(ConfigError, match="token_file"):
        use_config(Config(sandbox=SandboxConfig(urls=(a.url,), token_file=str(tmp_path / "none"))))
