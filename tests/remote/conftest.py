"""Fixtures of the remote tests: a private HOME per Node client run, and no process left behind."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.clients.support import wait_no_lingering


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "home"
    path.mkdir()
    yield path
    wait_no_lingering(path)
