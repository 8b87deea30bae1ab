"""Fixtures for the whole suite. The helpers themselves live in ``tests/support/``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.postgres_server import PostgresServer, PostgresUnavailable, start_postgres
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


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """A real PostgreSQL for the whole run (``bench/postgres_server.py``), or a skip saying
    why there cannot be one here."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed (psycopg)")
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL here: {exc}")
    yield server
    server.stop()


@pytest.fixture
def pg_url(postgres: PostgresServer) -> str:
    """A fresh, empty database of the run's PostgreSQL: its libpq URI."""
    return postgres.new_database()


@pytest.fixture
def private_postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL of the test's own, to stop (an outage) and start again."""
    pytest.importorskip("psycopg", reason="the postgres extra is not installed (psycopg)")
    try:
        server = start_postgres()
    except PostgresUnavailable as exc:
        pytest.skip(f"no PostgreSQL here: {exc}")
    yield server
    server.stop()
