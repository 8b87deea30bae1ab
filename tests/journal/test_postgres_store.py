"""The PostgreSQL store's own promises (``acp_agent/journal/postgres/``), on a real server.

Side files: the title, the client's mark, the settings and the archive flag go with the session
to the host that opens it next. Ownership: a session is taken over at once from an owner that closed it or whose connection
ended, and from a live owner only once its lease ran out; after a take-over nothing the old
owner writes lands, and it says it lost the session. An outage fails the flush and loses
nothing: the lines stay admitted and land once the database is back.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.journal.errors import JournalFlushError, JournalLeased, JournalTakenOver
from acp_agent.journal.events import Entry
from acp_agent.journal.paths import session_dir
from acp_agent.journal.postgres.lease import RENEWER, Lease
from acp_agent.journal.postgres.store import PgStore
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.store import forget_store, open_store, use_store
from acp_agent.journal.writer import JournalWriter
from acp_agent.session.catalog import all_summaries, client_titled, read_title, set_client_title
from acp_agent.session.settings import SessionSettings, read_settings, write_settings
from acp_agent.session.shelf import set_archived
from bench.postgres_server import PostgresServer

from .builders import HEADER, SESSION_ID, T0, simple_turn


def pg_store(state_dir: Path, url: str) -> PgStore:
    store = open_store(state_dir, url)
    assert isinstance(store, PgStore)
    return store


@pytest.fixture
def two(tmp_path: Path, pg_url: str) -> Iterator[tuple[PgStore, PgStore]]:
    """Two processes' stores on one database (separate state dirs, as on two hosts)."""
    a, b = pg_store(tmp_path / "a", pg_url), pg_store(tmp_path / "b", pg_url)
    yield a, b
    a.close()
    b.close()


def turn(writer: JournalWriter, number: int) -> list[Entry]:
    entries = [Entry(writer.next_seq + i, T0, e) for i, e in enumerate(simple_turn(number))]
    for entry in entries:
        writer.append(entry)
    return entries


def lease_of(writer: JournalWriter) -> Lease:
    hold = writer.hold
    assert isinstance(hold, Lease)
    return hold


def row(server: PostgresServer, url: str, sql: str) -> str:
    database = url.split("/")[3].split("?")[0]
    return server.psql(sql, database).strip()


async def test_an_owner_that_stopped_renewing_is_fenced_off(
    two: tuple[PgStore, PgStore], postgres: PostgresServer, pg_url: str
) -> None:
    a, b = two
    writer_a = await a.create(HEADER, None)
    acknowledged = turn(writer_a, 1)
    await writer_a.flush()
    RENEWER.discard(lease_of(writer_a))  # A is stopped: it renews nothing any more
    with pytest.raises(JournalLeased, match="open in another acp-agent process"):
        await b.open(SESSION_ID, None)  # while A's lease runs, A keeps the session
    row(postgres, pg_url, "UPDATE acp_agent_sessions SET lease_until = now() - interval '1s'")
    writer_b, loaded = await b.open(SESSION_ID, None)
    assert loaded.entries == acknowledged
    assert lease_of(writer_b).epoch == lease_of(writer_a).epoch + 1
    turn(writer_a, 2)  # A goes on as if nothing happened
    with pytest.raises(JournalTakenOver, match="was taken over by another process"):
        await writer_a.flush()
    with pytest.raises(JournalTakenOver):
        await writer_a.ensure_owned()
    b_entries = turn(writer_b, 2)
    await writer_b.flush()
    data = await anyio.to_thread.run_sync(b.read, SESSION_ID)
    assert parse_journal(data).entries == acknowledged + b_entries  # nothing of A's turn 2
    with pytest.raises(JournalTakenOver):
        await writer_a.close()
    await writer_b.close()


async def test_an_owner_whose_connection_ended_hands_over_at_once(
    two: tuple[PgStore, PgStore], postgres: PostgresServer, pg_url: str
) -> None:
    a, b = two
    writer_a = await a.create(HEADER, None)
    acknowledged = turn(writer_a, 1)
    await writer_a.flush()
    lease = lease_of(writer_a)
    RENEWER.discard(lease)  # A's process died, its lease renewer with it: nothing reconnects A
    row(postgres, pg_url, f"SELECT pg_terminate_backend({lease.backend}, 5000)")
    writer_b, loaded = await b.open(SESSION_ID, None)
    assert loaded.entries == acknowledged
    turn(writer_a, 2)
    with pytest.raises(JournalTakenOver):
        await writer_a.flush()  # A reconnects, finds a newer epoch: it writes nothing
    assert parse_journal(b.read(SESSION_ID)).entries == acknowledged
    await writer_b.close()


async def test_a_closed_session_is_taken_at_once_with_a_new_epoch(
    two: tuple[PgStore, PgStore], postgres: PostgresServer, pg_url: str
) -> None:
    a, b = two
    writer_a = await a.create(HEADER, None)
    turn(writer_a, 1)
    await writer_a.close()
    assert row(postgres, pg_url, "SELECT owner IS NULL, epoch FROM acp_agent_sessions") == "t|1"
    writer_b, loaded = await b.open(SESSION_ID, None)
    assert len(loaded.entries) == 6
    assert row(postgres, pg_url, "SELECT owner IS NULL, epoch FROM acp_agent_sessions") == "f|2"
    assert (await anyio.to_thread.run_sync(a.holder, SESSION_ID)) is not None
    await writer_b.close()


async def test_an_outage_fails_the_flush_and_loses_nothing(
    tmp_path: Path, private_postgres: PostgresServer
) -> None:
    store = pg_store(tmp_path, private_postgres.new_database())
    writer = await store.create(HEADER, None)
    first = turn(writer, 1)
    await writer.flush()
    private_postgres.halt()
    second = turn(writer, 2)
    with pytest.raises(JournalFlushError, match=r"journal store .* is unreachable"):
        await writer.flush()
    assert not writer.health.healthy and writer.health.unflushed == 6
    assert writer.durable_seq == 6
    private_postgres.resume()
    await writer.flush()  # the connection is opened again, the lease taken again
    assert writer.health.healthy and writer.durable_seq == 12
    third = turn(writer, 3)
    await writer.close()
    assert parse_journal(store.read(SESSION_ID)).entries == first + second + third
    store.close()


async def test_title_settings_and_archive_flag_move_with_the_session(
    two: tuple[PgStore, PgStore], tmp_path: Path
) -> None:
    a, b = two
    use_store(tmp_path / "a", a.url)
    use_store(tmp_path / "b", b.url)
    try:
        writer = await a.create(HEADER, None)
        await writer.close()
        dir_a = session_dir(tmp_path / "a", SESSION_ID)
        set_client_title(tmp_path / "a", SESSION_ID, "the client's title")
        write_settings(dir_a, SessionSettings(mode="plan", model="script:x"))
        set_archived(dir_a, True)
        listed = all_summaries(tmp_path / "b")  # host B, which never had the session
        assert [(s.title, s.archived) for s in listed] == [("the client's title", True)]
        writer_b, _ = await b.open(SESSION_ID, None)
        dir_b = session_dir(tmp_path / "b", SESSION_ID)
        assert read_settings(dir_b) == SessionSettings(mode="plan", model="script:x")
        assert read_title(dir_b) == "the client's title" and client_titled(dir_b)
        set_archived(dir_b, False)
        await writer_b.close()
        writer_a, _ = await a.open(SESSION_ID, None)
        assert not (dir_a / "archived").exists()  # B's change, laid down on A
        await writer_a.close()
    finally:
        forget_store(tmp_path / "a")
        forget_store(tmp_path / "b")
