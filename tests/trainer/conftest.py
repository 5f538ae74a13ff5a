"""Test envs for the trainer: cheap verifiers a random tiny model scores on about half the time."""

from __future__ import annotations

import pytest

from tempering.envs import SingleTurnEnv
from tempering.envs.fake import parity_env as make_parity_env


@pytest.fixture
def parity_env() -> SingleTurnEnv:
    return make_parity_env()
