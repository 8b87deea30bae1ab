"""Fixtures for the whole suite. The helpers themselves live in ``tests/support/``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.acp_schema import AcpSchema, SchemaMissingError, default_schema
from tests.support.recording import RecordingClient


@pytest.fixture(scope="session")
def acp_schema() -> AcpSchema:
    """The official ACP v1 JSON schema; fails (never skips) the test when it is not installed."""
    try:
        return default_schema()
    except SchemaMissingError as error:
        pytest.fail(str(error), pytrace=False)


@pytest.fixture
def agent_env(tmp_path: Path) -> dict[str, str]:
    """Environment overrides that keep a spawned agent's state inside the test's tmp dir."""
    state_dir = tmp_path / "agent-state"
    state_dir.mkdir()
    return {"ACP_AGENT_STATE_DIR": str(state_dir)}


@pytest.fixture
def recording_client() -> RecordingClient:
    return RecordingClient()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """The session cwd (resolved, so paths the agent reports compare equal)."""
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()


@pytest.fixture
def state_dir(agent_env: dict[str, str]) -> Path:
    """The state dir the ``agent_env`` overrides point the agent at."""
    return Path(agent_env["ACP_AGENT_STATE_DIR"])
