"""Shared fixtures: the tiny random model (built once into the shared cache) and a scratch run dir."""

from __future__ import annotations

import os

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
