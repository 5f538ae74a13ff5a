"""Shared fixtures: the tiny random model (built once into the shared cache) and a scratch run dir."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest  # noqa: E402


@pytest.fixture(scope="session")
def tiny():
    from tempering.models import load

    return load("tiny-random")
