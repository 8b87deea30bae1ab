"""The journal store contract (``acp_agent/journal/store.py``), held by both stores.

Every test runs against the ``file`` store (a state dir) and the PostgreSQL store (a fresh
database of a real server, ``bench/postgres_server.py``): the same events, the same bytes,
the same checks, one durable commit per barrier, one writer per session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.journal.errors import JournalExists, JournalLocked, JournalNotFound
from acp_agent.journal.events import Entry, SessionHeader
from acp_agent.journal.format import encode_entry, encode_header
from acp_agent.journal.invariant import check_journal
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.store import JournalStore, forget_store, use_store
from acp_agent.journal.writer import JournalWriter
from acp_agent.session.catalog import all_summaries
from acp_agent.session.fork import fork_session

from .builders import HEADER, SESSION_ID, T0, simple_turn


@pytest.fixture(params=["file", "postgresql"])
def store(request: pytest.FixtureRequest, state_dir: Path) -> Iterator[JournalStore]:
    url = "file" if request.param == "file" else request.getfixturevalue("pg_url")
    chosen = use_store(state_dir, url)
    yield chosen
    forget_store(state_dir)


def turn(writer: JournalWriter, number: int, text: str) -> list[Entry]:
    """Append one whole turn (not flushed); its entries."""
    entries = []
    for event in simple_turn(number, text):
        entry = Entry(seq=writer.next_seq, time=T0, event=event)
        writer.append(entry)
        entries.append(entry)
    return entries


def header(session_id: str) -> SessionHeader:
    return SessionHeader(id=session_id, created_at=HEADER.created_at, cwd=HEADER.cwd)


async def test_what_a_barrier_made_durable_reads_back_byte_for_byte(store: JournalStore) -> None:
    writer = await store.create(HEADER, None)
    entries = turn(writer, 1, "one")
    await writer.flush()
    assert writer.durable_seq == 6
    data = await anyio.to_thread.run_sync(store.read, SESSION_ID)
    assert data == encode_header(HEADER) + b"".join(encode_entry(e) for e in entries)
    parsed = parse_journal(data)
    assert parsed.entries == entries and parsed.tail is None
    assert check_journal(data) == []
    await writer.close()


async def test_one_durable_commit_per_barrier_however_many_events(store: JournalStore) -> None:
    writer = await store.create(HEADER, None)
    before = writer.stats
    for number in range(1, 6):
        turn(writer, number, f"t{number}")
    await writer.flush()
    await writer.flush()  # nothing pending: no commit
    after = writer.stats
    assert (after.flushes - before.flushes, after.syncs - before.syncs) == (1, 1)
    assert writer.durable_seq == 30
    await writer.close()


async def test_open_loads_the_history_and_appends_go_on_after_it(store: JournalStore) -> None:
    writer = await store.create(HEADER, None)
    first = turn(writer, 1, "one")
    await writer.close()
    reopened, loaded = await store.open(SESSION_ID, None)
    assert loaded.header == HEADER and loaded.entries == first and loaded.repaired is None
    assert reopened.next_seq == 7
    second = turn(reopened, 2, "two")
    await reopened.close()
    data = await anyio.to_thread.run_sync(store.read, SESSION_ID)
    assert parse_journal(data).entries == first + second
    assert check_journal(data) == []


async def test_an_id_is_created_once(store: JournalStore) -> None:
    writer = await store.create(HEADER, None)
    await writer.close()
    with pytest.raises(JournalExists):
        await store.create(HEADER, None)


async def test_an_unknown_session_is_not_found(store: JournalStore) -> None:
    with pytest.raises(JournalNotFound):
        await store.open("nobody", None)
    with pytest.raises(JournalNotFound):
        await anyio.to_thread.run_sync(store.read, "nobody")
    assert not await anyio.to_thread.run_sync(store.exists, "nobody")


async def test_one_writer_at_a_time_and_the_next_once_it_closed(store: JournalStore) -> None:
    writer = await store.create(HEADER, None)
    assert await anyio.to_thread.run_sync(store.holder, SESSION_ID) is not None
    with pytest.raises(JournalLocked):
        await store.open(SESSION_ID, None)
    await writer.close()
    assert await anyio.to_thread.run_sync(store.holder, SESSION_ID) is None
    again, _ = await store.open(SESSION_ID, None)
    await again.close()


async def test_sessions_are_listed_with_their_header(store: JournalStore, state_dir: Path) -> None:
    for name in ("a1", "b2"):
        writer = await store.create(header(name), None)
        turn(writer, 1, name)
        await writer.close()
    listed = {s.session_id: s for s in await anyio.to_thread.run_sync(store.sessions)}
    assert sorted(listed) == ["a1", "b2"]
    assert listed["a1"].header_line == encode_header(header("a1"))
    summaries = await anyio.to_thread.run_sync(all_summaries, state_dir)
    assert {s.session_id for s in summaries} == {"a1", "b2"}
    assert all(s.cwd == HEADER.cwd for s in summaries)


async def test_delete_removes_the_session_and_refuses_while_it_is_open(
    store: JournalStore,
) -> None:
    writer = await store.create(HEADER, None)
    with pytest.raises(JournalLocked):
        await anyio.to_thread.run_sync(store.delete, SESSION_ID)
    await writer.close()
    await anyio.to_thread.run_sync(store.delete, SESSION_ID)
    assert not await anyio.to_thread.run_sync(store.exists, SESSION_ID)
    assert await anyio.to_thread.run_sync(store.sessions) == []


async def test_a_fork_copies_the_history_into_the_same_store(
    store: JournalStore, state_dir: Path
) -> None:
    writer = await store.create(HEADER, None)
    first = turn(writer, 1, "one")
    turn(writer, 2, "two")
    await writer.close()
    child = await fork_session(state_dir, SESSION_ID, at_seq=6, new_id="child")
    assert child.parent is not None and child.parent.seq == 6
    data = await anyio.to_thread.run_sync(store.read, "child")
    assert parse_journal(data).entries == first
    assert check_journal(data) == []
