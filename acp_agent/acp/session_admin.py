"""ACP methods about sessions as things on a shelf: delete, archive, title, status.

``session/delete`` (stable v1, ``sessionCapabilities.delete``) and the unstable
``session/set_title`` (``title``), ``session/status`` (``status``), ``session/archive`` and
``session/unarchive`` (``archive``; ``session/list``'s ``archived`` filter is ``server.py``'s).
The session layer does the work (``Sessions.delete`` / ``set_archived`` / ``set_title`` /
``in_memory``, on disk through ``session/shelf.py``); this module only shapes the answers and
decides what runs on the reader.

- delete: an idle session open here is closed (nothing waits for the client: no turn runs),
  then its directory goes, all on the reader, so whatever the client sends next sees it gone.
  A session being closed (its cancelled turn may wait for the client) is deleted once closed,
  off the reader. A session with a turn running or queued is refused (``SessionBusy``).
- archive: like ``session/close`` for a session open here (its turn is cancelled, it leaves
  the registry at once, the answer waits for the close, then the flag is written); the
  ``archived`` flag is durable before the answer.
- set_title: normalized like the agent's own titles (whitespace collapsed, at most 80
  characters); empty is -32602. Durable before the answer; an open session tells its client
  with ``session_info_update`` after it.
- status: ``open`` while the session is in memory here, else ``saved`` (on disk); no side
  effect.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from acp_agent.acp.observer import AcpObserver
from acp_agent.acp.schema import (
    SessionIdParams,
    SessionStatusResult,
    SetSessionTitleParams,
    SetSessionTitleResult,
)
from acp_agent.errors import InvalidParams
from acp_agent.session.service import Session, Sessions
from acp_agent.transport.connection import Deferred, Then
from acp_agent.turn.ports import Notice, NoticeKind, Severity
from acp_agent.turn.titles import title_from

AcpSession = Session[AcpObserver]
Empty = dict[str, object]


class SessionAdmin:
    def __init__(
        self,
        sessions: Sessions[AcpObserver],
        wire_errors: Callable[[Awaitable[Empty]], Awaitable[Empty]],
    ) -> None:
        self.sessions = sessions
        self._wire_errors = wire_errors
        """Maps a session refusal raised off the reader to its wire error (``server.py``)."""

    async def delete(self, params: SessionIdParams) -> Empty | Deferred:
        session_id = params.session_id
        if session_id in (s.id for s in self.sessions.closing):
            return Deferred(self._wire_errors(self._delete(session_id)))
        return await self._delete(session_id)

    async def _delete(self, session_id: str) -> Empty:
        await self.sessions.delete(session_id)
        return {}

    async def archive(self, params: SessionIdParams) -> Deferred:
        session_id = params.session_id
        live = self.sessions.find(session_id)
        if live is None:  # on disk, or being closed: refusals are answered at once
            await self.sessions.set_archived(session_id, True)
            return Deferred(self._closed(session_id))
        await live.cancel()
        closed = self.sessions.close(live)  # nothing is awaited between this and the return

        async def answer() -> Empty:
            await closed
            return await self._wire_errors(self._archive_closed(session_id))

        return Deferred(answer())

    async def _closed(self, session_id: str) -> Empty:
        await self.sessions.wait_closed(session_id)
        return {}

    async def _archive_closed(self, session_id: str) -> Empty:
        await self.sessions.set_archived(session_id, True)
        return {}

    async def unarchive(self, params: SessionIdParams) -> Empty:
        await self.sessions.set_archived(params.session_id, False)
        return {}

    async def set_title(self, params: SetSessionTitleParams) -> Then:
        title = title_from(params.title)
        if not title:
            raise InvalidParams("the title is empty", {"path": "$.title"})
        live = await self.sessions.set_title(params.session_id, title)

        async def tell() -> None:
            if live is not None:
                await live.observer.titled(title)

        return Then(SetSessionTitleResult(title), tell)

    async def status(self, params: SessionIdParams) -> SessionStatusResult:
        await self.sessions.require_known(params.session_id)
        open_here = self.sessions.in_memory(params.session_id)
        return SessionStatusResult("open" if open_here else "saved")


async def tell_fallback(session: AcpSession) -> None:
    """A session whose saved model is not available here (``Session.unavailable_model``) is
    told so once, after its load / resume / fork answer, as a ``notice``."""
    spec = session.unavailable_model
    if spec is None:
        return
    session.unavailable_model = None
    now = session.model or "the server's default model"
    description = f"The model {spec} this session used is not available here; it uses {now}."
    title = "Model not available: using the default"
    await session.observer.notice(
        Notice(NoticeKind.MODEL_FALLBACK, Severity.WARNING, title, description)
    )
