"""The compile step of C and C++ is bounded by what the caller asked for.

By default (`compile_wall_s=None`, `compile_cpu_s=None`) the compile step spends the
run's own `wall_s` and `cpu_s`: compile plus run end within them. A number gives the
compile step a budget of its own, before the run's starts (SandboxFusion's
compile_timeout). The program under test is a compile that would run for years; the
limits on it are tight and the harness's margins are tens of seconds, so these tests
assert on how the run ended, not on how fast this machine is.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tempering.sandbox import Limits

# 2^40 distinct instantiations of T, each a constexpr loop of 100,000 steps (about a
# millisecond): unbounded compile time for any practical purpose, and little memory
# (g++ grows by some 30 MB a second on it), so the time limits, not memory, end it.
TEMPLATE_BOMB = r'''
constexpr unsigned long mix(unsigned long k) {
    for (unsigned long i = 0; i < 100000; ++i) k = k * 6364136223846793005UL + 1442695040888963407UL;
    return k;
}
template <int D, unsigned long K> struct T {
    static constexpr unsigned long v = T<D - 1, mix(K)>::v ^ T<D - 1, mix(K + 1)>::v;
};
template <unsigned long K> struct T<0, K> { static constexpr unsigned long v = K; };
int main() { return (int)(T<40, 1>::v & 1); }
'''
WALL_S = 3
MARGIN_S = 20  # the harness's allowance for a slow or loaded machine, far below the bomb's years
HARNESS_TIMEOUT_S = 600


def test_compile_limits_default_to_the_runs_own():
    lim = Limits(wall_s=WALL_S, cpu_s=4)
    assert (lim.compile_wall_s, lim.compile_cpu_s) == (None, None)
    assert (lim.compile_wall(), lim.compile_cpu()) == (WALL_S, 4)
    assert lim.total_wall_s(compiled=True) == lim.total_wall_s(compiled=False) == WALL_S
    own = lim.with_(compile_wall_s=5, compile_cpu_s=6)
    assert (own.compile_wall(), own.compile_cpu(), own.total_wall_s(compiled=True)) == (5, 6, WALL_S + 5)
    assert Limits.from_dict(own.as_dict()) == own
    assert Limits.from_dict(lim.as_dict()) == lim
    for bad in (0, -1, True, "5"):
        with pytest.raises(ValueError, match="compile_wall_s must be a positive number"):
            Limits(compile_wall_s=bad)
    with pytest.raises(ValueError, match="unknown limits"):
        Limits.from_dict({**lim.as_dict(), "compile_s": 3})


def _tight(sandbox, **changes) -> Limits:
    return sandbox.limits.with_(memory_mb=1024, **changes)


def test_template_bomb_ends_within_the_runs_wall_limit(sandbox, host):
    lim = _tight(sandbox, wall_s=WALL_S, cpu_s=WALL_S, compile_wall_s=None, compile_cpu_s=None)
    t = time.monotonic()
    r = sandbox.run(TEMPLATE_BOMB, language="cpp", limits=lim)
    elapsed = time.monotonic() - t
    assert (r.status, r.detail, r.stdout) == ("timeout", "compile timeout", ""), r
    assert elapsed < WALL_S + MARGIN_S, (elapsed, r)
    host.check()


def test_template_bomb_ends_within_the_runs_cpu_limit(sandbox, host):
    big = 10 * MARGIN_S
    lim = _tight(sandbox, wall_s=big, cpu_s=WALL_S, compile_wall_s=None, compile_cpu_s=None)
    t = time.monotonic()
    r = sandbox.run(TEMPLATE_BOMB, language="cpp", limits=lim)
    elapsed = time.monotonic() - t
    assert (r.status, r.detail, r.stdout) == ("timeout", "compile timeout", ""), r
    assert elapsed < WALL_S + MARGIN_S < big, (elapsed, r)
    host.check()


@pytest.mark.parametrize("which", ["compile_wall_s", "compile_cpu_s"])
def test_a_compile_budget_of_its_own_is_honoured(sandbox, host, which):
    big = 10 * MARGIN_S
    lim = _tight(sandbox, wall_s=big, cpu_s=big, compile_wall_s=big, compile_cpu_s=big).with_(**{which: 2})
    t = time.monotonic()
    r = sandbox.run(TEMPLATE_BOMB, language="cpp", limits=lim)
    elapsed = time.monotonic() - t
    assert (r.status, r.detail, r.stdout) == ("timeout", "compile timeout", ""), r
    assert elapsed < 2 + MARGIN_S < big, (elapsed, r)
    host.check()


def test_the_program_gets_what_the_compile_step_left(sandbox, host):
    """A compile that succeeds, then a program that sleeps forever: the run's own wall
    limit ends it, with the compile step counted in."""
    code = "#include <unistd.h>\nint main(void) { for (;;) sleep(1000); }\n"
    lim = _tight(sandbox, wall_s=WALL_S, compile_wall_s=None, compile_cpu_s=None)
    t = time.monotonic()
    r = sandbox.run(code, language="c", limits=lim)
    elapsed = time.monotonic() - t
    assert (r.status, r.detail, r.exit_code) == ("timeout", f"wall time passed {WALL_S} s", -9), r
    assert elapsed < WALL_S + MARGIN_S
    host.check()


def _cli(*args: str) -> tuple[dict, float]:
    t = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "tempering.cli.main", "sandbox", "run", "--json", *args],
                         capture_output=True, text=True, timeout=HARNESS_TIMEOUT_S)
    elapsed = time.monotonic() - t
    if "sandbox runs as root" in out.stderr and os.environ.get("TEMPERING_REQUIRE_SANDBOX") != "1":
        pytest.skip("sandbox unavailable")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout), elapsed


def test_cli_timeout_bounds_the_compile_step(tmp_path):
    bomb = tmp_path / "bomb.cpp"
    bomb.write_text(TEMPLATE_BOMB)
    obj, elapsed = _cli("--timeout", str(WALL_S), str(bomb))
    assert (obj["status"], obj["detail"], obj["stdout"]) == ("timeout", "compile timeout", ""), obj
    assert elapsed < WALL_S + MARGIN_S, elapsed


def test_cli_compile_timeout_is_honoured(tmp_path):
    bomb = tmp_path / "bomb.cpp"
    bomb.write_text(TEMPLATE_BOMB)
    big = 10 * MARGIN_S
    obj, elapsed = _cli("--timeout", str(big), "--compile-timeout", "2", str(bomb))
    assert (obj["status"], obj["detail"]) == ("timeout", "compile timeout"), obj
    assert elapsed < 2 + MARGIN_S < big, elapsed
    r = subprocess.run([sys.executable, "-m", "tempering.cli.main", "sandbox", "run", "--compile-timeout", "0",
                        str(bomb)], capture_output=True, text=True, timeout=HARNESS_TIMEOUT_S)
    assert r.returncode == 2 and "compile_wall_s must be a positive number" in r.stderr, r.stderr
