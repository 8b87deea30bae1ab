"""Fixtures of the durability suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.descriptors import tmpfs_state_dir


@pytest.fixture
def shm_state() -> Iterator[Path]:
    """A state dir on tmpfs when there is one, for the tests that count descriptors over
    thousands of sessions: each ``session/new`` costs rounds of fsyncs on a disk, and
    durability itself is the business of the rest of this suite."""
    with tmpfs_state_dir() as path:
        yield path
