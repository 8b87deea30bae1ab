"""A session's journal in its store, taken for a live session: created, opened or forked.

The store is the state dir's (``journal/store.py``: files under it, or PostgreSQL).

Each function returns a ``JournalWriter`` holding the session's lock, or raises a session error
(``errors.py``) that says what went wrong in the session layer's words: never a silent fresh
session, never a journal error a front door must know about. Opening repairs what a crash left:
a torn tail is moved aside by the reader (logged here), a turn left open gets its closing
events (``journal/recovery.py``), and the background tasks whose endings the session was never
told of (one a dead process left running ended with the restart: ``tools/background.py``) get
their task messages, between turns; all admitted but not yet durable (the caller commits them,
then marks the endings reported: ``Opened.reported``).
"""

from __future__ import annotations

from pathlib import Path

import anyio
import msgspec

from acp_agent.content import JsonObject
from acp_agent.journal.errors import JournalError, JournalExists, JournalNotFound
from acp_agent.journal.events import Entry, Event, SessionHeader, UserMessage
from acp_agent.journal.files import FileFactory
from acp_agent.journal.paths import InvalidSessionId, session_dir, validate_session_id
from acp_agent.journal.recovery import interrupted_turn_repair
from acp_agent.journal.store import journal_store
from acp_agent.journal.writer import JournalWriter
from acp_agent.logs import get_logger
from acp_agent.session.catalog import read_title
from acp_agent.session.errors import (
    BadSessionId,
    IdRole,
    SessionIdInUse,
    SessionUnavailable,
    UnknownSession,
)
from acp_agent.tools.background import TaskTable
from acp_agent.turn.ports import new_id, now_ms

log = get_logger("acp_agent.sessions")


class Opened(msgspec.Struct):
    """A session journal taken from disk: its writer, its history (with any repair appended,
    not yet durable) and its title."""

    writer: JournalWriter
    header: SessionHeader
    entries: list[Entry]
    title: str | None
    tasks: TaskTable
    reported: list[str] = msgspec.field(default_factory=list)
    """The tasks whose endings this open appended."""


def checked_id(session_id: str, role: IdRole) -> str:
    try:
        validate_session_id(session_id)
    except InvalidSessionId as exc:
        raise BadSessionId(str(exc), session_id, role) from exc
    return session_id


async def create_journal(
    state_dir: Path, header: SessionHeader, file_factory: FileFactory | None
) -> JournalWriter:
    """A new session's journal. A directory without a journal is what a ``session/new`` cut by
    a crash leaves: that id was never answered to anyone, so it is free."""
    checked_id(header.id, IdRole.REQUESTED)
    store = journal_store(state_dir)
    try:
        # Files: one stat, as ever (no thread hop on a session/new); a database: off the loop.
        if store.shared:
            taken = await anyio.to_thread.run_sync(store.exists, header.id)
        else:
            taken = store.exists(header.id)
        if taken:
            raise SessionIdInUse(header.id)
        return await store.create(header, file_factory)
    except JournalExists as exc:
        raise SessionIdInUse(header.id) from exc
    except (JournalError, OSError) as exc:
        raise SessionUnavailable(header.id, exc) from exc


async def open_journal(
    state_dir: Path, session_id: str, file_factory: FileFactory | None
) -> Opened:
    """A session on disk: loaded, tail-repaired, an interrupted turn closed."""
    directory = session_dir(state_dir, checked_id(session_id, IdRole.EXISTING))
    store = journal_store(state_dir)
    if not store.shared and not directory.is_dir():
        raise UnknownSession(session_id)
    try:
        writer, loaded = await store.open(session_id, file_factory)
    except JournalNotFound as exc:  # a session/new cut by a crash: no session there
        raise UnknownSession(session_id) from exc
    except (JournalError, OSError) as exc:
        raise SessionUnavailable(session_id, exc) from exc
    if loaded.repaired is not None:
        side_file = str(loaded.repaired.side_file)
        log.warning("journal_tail_moved_aside", session_id=session_id, side_file=side_file)
    entries = list(loaded.entries)
    tasks = await anyio.to_thread.run_sync(TaskTable, directory, now_ms)
    endings = tasks.unreported()
    told: list[Event] = [UserMessage(new_id(), content, src) for _, content, src in endings]
    for event in [*interrupted_turn_repair(entries), *told]:
        entry = Entry(seq=writer.next_seq, time=now_ms(), event=event)
        entries.append(entry)
        writer.append(entry)
    reported = [task_id for task_id, _, _ in endings]
    return Opened(writer, loaded.header, entries, read_title(directory), tasks, reported)


async def fork_journal(
    state_dir: Path,
    parent_id: str,
    cwd: str | None,
    *,
    at_seq: int | None,
    session_id: str | None,
    mcp_servers: list[JsonObject] | None,
    file_factory: FileFactory | None,
    at_turn: int | None = None,
) -> SessionHeader:
    """Write the child of ``parent_id`` at a stable boundary (``fork.py``; ``ForkRefused`` when
    the point is not one); open it next."""
    # Here, not at the top: ``fork.py`` brings the journal invariant's checker (``invariant``,
    # ``rules``), which only a fork runs; a process's first ``session/new`` or ``load`` does not
    # import it (tests/integration/test_startup.py).
    from acp_agent.session.fork import fork_session

    try:
        return await fork_session(
            state_dir,
            parent_id,
            at_seq=at_seq,
            at_turn=at_turn,
            new_id=session_id,
            cwd=cwd,
            mcp_servers=mcp_servers,
            file_factory=file_factory,
        )
    except InvalidSessionId as exc:
        role = IdRole.EXISTING if exc.session_id == parent_id else IdRole.REQUESTED
        raise BadSessionId(str(exc), exc.session_id, role) from exc
    except JournalNotFound as exc:
        raise UnknownSession(parent_id) from exc
    except JournalExists as exc:
        raise SessionIdInUse(exc.session_id) from exc
    except JournalError as exc:
        raise SessionUnavailable(parent_id, exc) from exc
