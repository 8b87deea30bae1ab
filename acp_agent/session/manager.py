"""The session registry: creates session actors, finds them, and shuts them all down.

Each session owns a journal directory ``<state-dir>/sessions/<id>/`` and a ``JournalWriter``
holding its lock. Actors run in the manager's task group, so they live as long as the server.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

import anyio
import structlog
from anyio.abc import TaskGroup

from acp_agent.content import JsonObject
from acp_agent.errors import InternalError, InvalidParams, ResourceNotFound, RpcError
from acp_agent.journal.errors import (
    JournalError,
    JournalExists,
    JournalFlushError,
    JournalLocked,
    JournalNotFound,
)
from acp_agent.journal.events import Entry, SessionHeader
from acp_agent.journal.files import FileFactory
from acp_agent.journal.paths import (
    InvalidSessionId,
    journal_path,
    session_dir,
    validate_session_id,
)
from acp_agent.journal.recovery import interrupted_turn_repair
from acp_agent.journal.writer import JournalWriter
from acp_agent.session.actor import SessionActor
from acp_agent.session.catalog import read_title, write_title
from acp_agent.session.fork import ForkRefused, fork_session
from acp_agent.session.ports import SessionDeps, SessionObserver, new_id, now_ms

log = structlog.get_logger("acp_agent.sessions")

DepsFactory = Callable[[SessionHeader], SessionDeps]
ObserverFactory = Callable[[SessionHeader, SessionDeps], SessionObserver]


class SessionUnavailable(InternalError):
    """A session exists on disk but its journal cannot be served."""

    def __init__(self, session_id: str, cause: JournalError | OSError) -> None:
        reason = "journal_locked" if isinstance(cause, JournalLocked) else "journal_unreadable"
        super().__init__(
            f"cannot open session {session_id!r}: {cause}",
            {"reason": reason, "sessionId": session_id},
        )


class SessionManager:
    def __init__(
        self,
        state_dir: Path,
        tg: TaskGroup,
        deps_factory: DepsFactory,
        observer_factory: ObserverFactory,
        file_factory: FileFactory | None = None,
    ) -> None:
        self.state_dir = state_dir
        self._file_factory = file_factory
        self._tg = tg
        self._deps_factory = deps_factory
        self._observer_factory = observer_factory
        self._sessions: dict[str, SessionActor] = {}

    def get(self, session_id: str) -> SessionActor:
        actor = self._sessions.get(session_id)
        if actor is None:
            raise ResourceNotFound(f"unknown session {session_id!r}", {"sessionId": session_id})
        return actor

    def find(self, session_id: str) -> SessionActor | None:
        return self._sessions.get(session_id)

    @property
    def sessions(self) -> list[SessionActor]:
        return list(self._sessions.values())

    async def create(
        self, cwd: str, session_id: str | None = None, mcp_servers: list[JsonObject] | None = None
    ) -> SessionActor:
        sid = session_id if session_id is not None else new_id()
        try:
            validate_session_id(sid)
        except InvalidSessionId as exc:
            raise InvalidParams(str(exc), {"path": "$._meta.acp_agent.sessionId"}) from exc
        directory = session_dir(self.state_dir, sid)
        in_use = InvalidParams(f"session id {sid!r} is already in use", {"sessionId": sid})
        # A directory without a journal is what a session/new cut by a crash leaves: the id
        # was never answered to anyone, so it is free (create takes over the directory).
        if sid in self._sessions or journal_path(directory).exists():
            raise in_use
        header = SessionHeader(id=sid, created_at=now_ms(), cwd=cwd, mcp_servers=mcp_servers)
        try:
            writer = await JournalWriter.create(directory, header, file_factory=self._file_factory)
        except JournalExists as exc:
            raise in_use from exc
        except (JournalError, OSError) as exc:
            raise SessionUnavailable(sid, exc) from exc
        return await self._start(header, writer)

    async def open(self, session_id: str) -> SessionActor:
        """The live session, or the one on disk: loaded, tail-repaired, interrupted turn closed.

        Raises ``ResourceNotFound`` when there is no such session and ``SessionUnavailable``
        when its journal cannot be served (locked by another process, corrupt): never a silent
        fresh session.
        """
        live = self._sessions.get(session_id)
        if live is not None:
            return live
        try:
            validate_session_id(session_id)
        except InvalidSessionId as exc:
            raise InvalidParams(str(exc), {"path": "$.sessionId"}) from exc
        directory = session_dir(self.state_dir, session_id)
        if not directory.is_dir():
            raise ResourceNotFound(f"unknown session {session_id!r}", {"sessionId": session_id})
        try:
            writer, loaded = await JournalWriter.open(directory, file_factory=self._file_factory)
        except JournalNotFound as exc:  # a session/new cut by a crash: no session there
            raise ResourceNotFound(
                f"unknown session {session_id!r}", {"sessionId": session_id}
            ) from exc
        except (JournalError, OSError) as exc:
            raise SessionUnavailable(session_id, exc) from exc
        entries = list(loaded.entries)
        for event in interrupted_turn_repair(entries):
            entry = Entry(seq=writer.next_seq, time=now_ms(), event=event)
            entries.append(entry)
            writer.append(entry)
        if loaded.repaired is not None:
            log.warning(
                "journal_tail_moved_aside",
                session_id=session_id,
                side_file=str(loaded.repaired.side_file),
            )
        actor = await self._start(loaded.header, writer, entries, read_title(directory))
        await actor.commit_repair()  # a failure is reported like any flush failure, then retried
        return actor

    async def fork(
        self,
        parent_id: str,
        cwd: str,
        *,
        at_seq: int | None = None,
        session_id: str | None = None,
        mcp_servers: list[JsonObject] | None = None,
    ) -> SessionActor:
        """Fork ``parent_id`` at a stable boundary (``session/fork.py``) and open the child.

        A parent live here is flushed first (best effort), so the fork sees what it admitted.
        """
        live = self._sessions.get(parent_id)
        if live is not None:
            await _flush_admitted(live)
        try:
            header = await fork_session(
                self.state_dir,
                parent_id,
                at_seq=at_seq,
                new_id=session_id,
                cwd=cwd,
                mcp_servers=mcp_servers,
                file_factory=self._file_factory,
            )
        except (InvalidSessionId, ForkRefused, JournalError) as exc:
            raise _fork_error(parent_id, exc) from exc
        return await self.open(header.id)

    async def _start(
        self,
        header: SessionHeader,
        writer: JournalWriter,
        entries: list[Entry] | None = None,
        title: str | None = None,
    ) -> SessionActor:
        deps = self._deps_factory(header)
        deps.remember_title = partial(write_title, self.state_dir, header.id)
        observer = self._observer_factory(header, deps)
        actor = SessionActor(header, writer, entries or [], deps, observer, title)
        await self._tg.start(actor.run)
        self._sessions[header.id] = actor
        log.info("session_started", session_id=header.id, cwd=header.cwd)
        return actor

    async def cancel_all(self) -> None:
        for actor in self.sessions:
            await actor.cancel()

    async def close_all(self) -> None:
        """Wait for every session to be quiet, flush and close its journal (all at once, so
        stopping each session's MCP servers does not add up)."""
        async with anyio.create_task_group() as tg:
            for actor in self.sessions:
                tg.start_soon(self.close, actor)

    async def close(self, actor: SessionActor) -> None:
        """Dispose one session: quiescence (turns and flushes), then stop its MCP servers and
        release its journal."""
        if self._sessions.get(actor.id) is not actor:
            return
        await actor.when_idle()
        del self._sessions[actor.id]
        await actor.stop()
        with anyio.CancelScope(shield=True):
            await actor.deps.tools.aclose()
            try:
                await actor.writer.close()
            except JournalFlushError as exc:
                log.error("session_closed_unflushed", session_id=actor.id, error=exc.error)
                return
        log.info("session_closed", session_id=actor.id)


async def _flush_admitted(actor: SessionActor) -> None:
    try:
        await actor.writer.flush()
    except JournalError as exc:  # the actor reports its own flush failures
        log.warning("fork_parent_unflushed", session_id=actor.id, error=str(exc))


def _fork_error(parent_id: str, exc: Exception) -> RpcError:
    match exc:
        case InvalidSessionId(session_id=sid):
            path = "$.sessionId" if sid == parent_id else "$._meta.acp_agent.sessionId"
            return InvalidParams(str(exc), {"path": path})
        case JournalNotFound():
            return ResourceNotFound(f"unknown session {parent_id!r}", {"sessionId": parent_id})
        case JournalExists(session_id=sid):
            return InvalidParams(f"session id {sid!r} is already in use", {"sessionId": sid})
        case ForkRefused(seq=seq):
            return InvalidParams(str(exc), {"sessionId": parent_id, "seq": seq})
        case JournalError():
            return SessionUnavailable(parent_id, exc)
    raise AssertionError(exc)
