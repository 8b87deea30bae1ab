"""The two tables, how they are created, and how a connection is opened.

``acp_agent_sessions``: one row per session, holding its header line (the bytes a journal file
starts with), its last durable seq, and its ownership: ``epoch`` (the fencing token: bumped at
every take-over), ``owner`` (``host:pid``), ``owner_backend`` (the PostgreSQL backend pid of the
owner's connection, which holds the session's advisory lock) and ``lease_until`` (renewed by the
owner; ``NULL`` once it closed the session). ``acp_agent_events``: one row per event, its line
exactly as a journal file holds it (envelope, checksum and newline), keyed by ``(session_id,
seq)`` so a gap or a duplicate cannot be stored. ``acp_agent_side_files``: a copy of the
session directory's side files (title, the client-title mark, ``settings.json``, the archive
flag) that every host writes through and the host opening the session lays down again
(``store.py``), so a session moves between hosts with its title and settings.

The tables are created at first use, under a transaction-level advisory lock so two processes
starting at once do not race on ``CREATE TABLE IF NOT EXISTS``.
"""

from __future__ import annotations

import hashlib
from typing import Final

import psycopg

from acp_agent.journal.errors import JournalStoreDown

SCHEMA_LOCK: Final = 0x6163_7061_6A6E_6C00  # "acpajnl\0": one key for creating the tables
CONNECT_TIMEOUT_S: Final = 5

SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS acp_agent_sessions (
    id text PRIMARY KEY,
    header bytea NOT NULL,
    epoch bigint NOT NULL DEFAULT 1,
    owner text,
    owner_backend integer,
    lease_until timestamptz,
    last_seq bigint NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE TABLE IF NOT EXISTS acp_agent_events (
    session_id text NOT NULL REFERENCES acp_agent_sessions (id) ON DELETE CASCADE,
    seq bigint NOT NULL,
    line bytea NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE TABLE IF NOT EXISTS acp_agent_side_files (
    session_id text NOT NULL REFERENCES acp_agent_sessions (id) ON DELETE CASCADE,
    name text NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (session_id, name)
);
"""


def connect(url: str, label: str) -> psycopg.Connection[tuple[object, ...]]:
    """An autocommit connection (transactions are explicit), or ``JournalStoreDown``."""
    try:
        return psycopg.connect(
            url, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S, application_name="acp-agent"
        )
    except psycopg.Error as exc:
        raise JournalStoreDown(label, _first_line(exc)) from exc


def ensure_schema(conn: psycopg.Connection[tuple[object, ...]]) -> None:
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
        conn.execute(SCHEMA)


def lock_key(session_id: str) -> int:
    """The session's advisory lock key: 63 bits of BLAKE2b of its id (a signed bigint)."""
    digest = hashlib.blake2b(b"acp-agent session " + session_id.encode(), digest_size=8)
    return int.from_bytes(digest.digest(), "big") >> 1


def down(label: str, exc: psycopg.Error) -> JournalStoreDown:
    return JournalStoreDown(label, _first_line(exc))


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
