"""Fixtures of the client tests: a private HOME per test, and no process left behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.support import wait_no_lingering


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """The clients' HOME; after the test, no process may still run with it (acpx's queue
    owner and the agents it spawned exit within ``--ttl 1``)."""
    path = tmp_path / "home"
    path.mkdir()
    yield path
    wait_no_lingering(path)
