"""Fixtures for the journal tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.journal.paths import session_dir

from .builders import SESSION_ID, RecordingFactory


@pytest.fixture
def state_dir(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def sdir(state_dir: Path) -> Path:
    """The session directory of ``SESSION_ID`` (not created)."""
    return session_dir(state_dir, SESSION_ID)


@pytest.fixture
def files() -> RecordingFactory:
    return RecordingFactory()
