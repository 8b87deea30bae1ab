"""A session's view of its ACP client: updates out, ``fs/*`` requests out.

``AcpObserver`` implements the session layer's ``SessionObserver`` by projecting what happens
(``projection.py``) into ``session/update`` notifications; journal flush failures go out as the
``_acp_agent/journal_error`` notification. ``AcpClientFs`` is the client's file system, handed to
tools only when the client advertised ``fs.readTextFile``; ``AcpClient.tool_context`` adds the
other client services tools use (``toolclient.py``). Compaction updates go only to a client
that advertised ``session.compaction`` (``compaction_updates``), ``notice`` updates only to one
that advertised ``session.notices`` (``notices``): provider retries and model fallbacks
(``Notice``), and journal errors besides ``_acp_agent/journal_error``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import chain, islice
from pathlib import Path

import structlog

from acp_agent.acp import projection
from acp_agent.acp.extensions import JournalErrorParams
from acp_agent.acp.schema import (
    AgentMessageChunk,
    ClientCapabilities,
    ConfigOptionUpdate,
    Cost,
    CurrentModeUpdate,
    NoticeUpdate,
    ReadTextFileParams,
    ReadTextFileResult,
    SessionConfigSelect,
    SessionInfoUpdate,
    SessionNotification,
    SessionUpdate,
    UsageUpdate,
)
from acp_agent.acp.toolclient import (
    AcpClientWriter,
    AcpElicitation,
    AcpPermissionAsker,
    AcpTerminals,
    AcpToolProgress,
)
from acp_agent.commands.words import SlashCommand
from acp_agent.content import TextContent
from acp_agent.journal.events import Entry, SessionHeader, ToolCallPart
from acp_agent.model.base import Usage
from acp_agent.permissions.book import RuleBook
from acp_agent.sandbox.guard import Sandbox, SessionSandbox
from acp_agent.tools.base import ToolContext
from acp_agent.tools.permissions import Permissions
from acp_agent.transport.connection import Connection
from acp_agent.turn.compaction import CompactionProgress
from acp_agent.turn.ports import Notice, NoticeKind, Severity, new_id
from acp_agent.turn.toolrun import ToolRunner

log = structlog.get_logger("acp_agent.acp")

COST_CURRENCY = "USD"
"""Providers report cost in dollars (OpenRouter's credits are dollars); configured prices are."""


REPLAY_BLOCK = 64
"""About how many replayed ``session/update`` frames are queued at once (``AcpObserver.replay``):
blocks of 256 measured slower on a 100k replay (scratch runs, interleaved with 64)."""


class AcpObserver:
    def __init__(
        self,
        conn: Connection,
        session_id: str,
        catalog: projection.ToolCatalog,
        compaction_updates: bool = False,
        *,
        notices: bool = False,
        names: projection.ToolNames | None = None,
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.catalog = catalog
        self.compaction_updates = compaction_updates
        self.notices = notices
        self.names: projection.ToolNames = {} if names is None else names
        """Tool names by ``toolCallId`` until the call's result (``projection.ToolNames``)."""
        self.cost = 0.0
        """What this session's requests cost in this process (``usage_update.cost``)."""

    async def _update(self, update: SessionUpdate, *, urgent: bool = True) -> None:
        """Urgent unless streamed: the actor must never wait on a client that is not reading
        (it could not commit a turn or honour a cancel); streamed deltas and replays wait."""
        notification = SessionNotification(self.session_id, update)
        await self.conn.notify("session/update", notification, urgent=urgent)

    async def appended(self, entry: Entry) -> None:
        for update in self._project(entry, live=True):
            await self._update(update)

    def _project(self, entry: Entry, *, live: bool) -> list[SessionUpdate]:
        updates, names = self.compaction_updates, self.names
        return projection.project(
            entry, self.catalog, live=live, compaction_updates=updates, names=names
        )

    async def text_delta(self, message_id: str, text: str) -> None:
        await self._update(projection.text_chunk(message_id, text), urgent=False)

    async def thought_delta(self, message_id: str, text: str) -> None:
        await self._update(projection.thought_chunk(message_id, text), urgent=False)

    async def tool_started(self, call: ToolCallPart) -> None:
        await self._update(projection.tool_in_progress(call.id, call.name), urgent=False)

    async def journal_error(self, error: str, unflushed: int) -> None:
        params = JournalErrorParams(self.session_id, error, unflushed)
        await self.conn.notify("_acp_agent/journal_error", params, urgent=True)
        detail = f"{error} ({unflushed} event(s) not yet durable; the next flush retries them)"
        title = "The session journal could not be written"
        await self.notice(Notice(NoticeKind.JOURNAL_ERROR, Severity.ERROR, title, detail))

    async def notice(self, notice: Notice) -> None:
        """A ``notice`` update, for a client that advertised ``session.notices`` only."""
        if not self.notices:
            return
        meta: dict[str, object] = {"acp_agent": {"kind": str(notice.kind)}}
        update = NoticeUpdate(str(notice.severity), notice.title, notice.description, meta)
        await self._update(update)

    async def titled(self, title: str) -> None:
        await self._update(SessionInfoUpdate(title=title))

    async def compaction_progress(
        self, compaction_id: str, progress: CompactionProgress, error: str | None
    ) -> None:
        if self.compaction_updates:
            await self._update(projection.compaction_progress(compaction_id, progress, error))

    async def usage(self, usage: Usage, context_window: int) -> None:
        """``usage_update``: what the context now holds is the last request's input plus its
        answer, less its reasoning (thoughts are not sent back), of the session model's window;
        the cost so far when the provider reports one; the provider's own counts in ``_meta``."""
        counts = {
            "inputTokens": usage.input_tokens,
            "outputTokens": usage.output_tokens,
            "reasoningTokens": usage.reasoning_tokens,
            "cachedTokens": usage.cached_tokens,
        }
        meta: dict[str, object] = {
            "acp_agent": {key: value for key, value in counts.items() if value is not None}
        }
        used = usage.input_tokens + usage.output_tokens - (usage.reasoning_tokens or 0)
        if usage.cost is not None:
            self.cost += usage.cost
        cost = Cost(round(self.cost, 6), COST_CURRENCY) if self.cost else None
        await self._update(UsageUpdate(used=used, size=context_window, cost=cost, meta=meta))

    async def note(self, text: str) -> None:
        """Something the user should know that is not history (not journaled): an agent
        message of its own, marked ``_meta.acp_agent.note``."""
        chunk = AgentMessageChunk(TextContent(text=text), new_id(), {"acp_agent": {"note": True}})
        await self._update(chunk)

    async def mode_changed(self, mode_id: str, config_options: list[SessionConfigSelect]) -> None:
        """The mode, both ways a client may track it: ``modes`` and the ``mode`` config option."""
        await self._update(CurrentModeUpdate(mode_id))
        await self._update(ConfigOptionUpdate(config_options))

    async def advertise_commands(self, commands: Sequence[SlashCommand]) -> None:
        """``available_commands_update``: what the session offers as slash commands."""
        await self._update(projection.available_commands(commands))

    async def config_changed(self, config_options: list[SessionConfigSelect]) -> None:
        """``config_option_update``: an option changed without the client asking (``/model``)."""
        await self._update(ConfigOptionUpdate(config_options))

    async def command_answer(self, text: str, command: str) -> None:
        """A command's answer by the agent itself (``/status``, ``/model``, …): an agent message
        marked ``_meta.acp_agent.command``, not journaled (``commands/status.py`` says why)."""
        meta: dict[str, object] = {"acp_agent": {"command": command}}
        await self._update(AgentMessageChunk(TextContent(text=text), new_id(), meta))

    async def replay(self, entries: list[Entry]) -> None:
        """``session/load``: the whole history, through the same projection as live updates
        (``projection.replay``), queued ``REPLAY_BLOCK`` notifications at a time
        (``Connection.notify_all``: the same frames as one ``_update`` each, without a queue
        turn per frame); each block waits for room, as streamed updates do. The updates are
        wrapped by one ``map`` and cut into blocks by ``islice`` (no Python loop per entry)."""
        updates = projection.replay(
            entries, self.catalog, compaction_updates=self.compaction_updates, names=self.names
        )
        wrap = partial(SessionNotification, self.session_id)
        notifications = map(wrap, chain.from_iterable(updates))
        while block := list(islice(notifications, REPLAY_BLOCK)):
            await self.conn.notify_all("session/update", block)


class AcpClient:
    """The client at the other end of one connection, as its sessions see it: the connection,
    and the capabilities its ``initialize`` advertised (until then, none). Builds each session's
    observer and its tools' view of the client."""

    def __init__(self, conn: Connection, rules: RuleBook | None = None) -> None:
        self.conn = conn
        self.capabilities = ClientCapabilities()
        self.rules = rules or RuleBook()
        """The permission rules of the process (config, and the state dir's project rules)."""

    def observer(self, header: SessionHeader, tools: ToolRunner) -> AcpObserver:
        caps, progress = self.capabilities, tools.context.progress
        names = progress.names if isinstance(progress, AcpToolProgress) else None
        return AcpObserver(
            self.conn, header.id, tools, caps.compaction_updates, notices=caps.notices, names=names
        )

    def client_fs(self, session_id: str) -> AcpClientFs | None:
        if not self.capabilities.fs.read_text_file:
            return None
        return AcpClientFs(self.conn, session_id)

    def tool_context(self, header: SessionHeader, sandbox: Sandbox) -> ToolContext:
        """The tools' view of a session: each client service only if it was advertised, the
        process's ``sandbox`` around its commands."""
        caps, conn, sid = self.capabilities, self.conn, header.id
        return ToolContext(
            sid,
            Path(header.cwd),
            fs=self.client_fs(sid),
            writer=AcpClientWriter(conn, sid) if caps.fs.write_text_file else None,
            terminals=AcpTerminals(conn, sid) if caps.terminal else None,
            progress=AcpToolProgress(conn, sid),
            permissions=Permissions(
                asker=AcpPermissionAsker(conn, sid),
                session_id=sid,
                rules=self.rules.for_session(header.cwd),
            ),
            elicitation=AcpElicitation(conn, sid) if caps.elicitation_form else None,
            sandbox=SessionSandbox(sandbox),
        )


class AcpClientFs:
    def __init__(self, conn: Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        params = ReadTextFileParams(self.session_id, path, line, limit)
        result = await self.conn.request("fs/read_text_file", params, ReadTextFileResult)
        return result.content
