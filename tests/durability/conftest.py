"""Fixtures of the durability suite: a workspace (the session cwd) and the agent's state dir."""

from __future__ import annotations

from pathlib import Path

import pytest


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
