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
from itertools import islice
from pathlib import Path

from acp_agent.acp import projection
from acp_agent.acp.cursor import Cursor
from acp_agent.acp.extensions import JournalErrorParams, TurnEndedParams
from acp_agent.acp.line import ClientLine, Peer
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
from acp_agent.journal.events import (
    Entry,
    SessionHeader,
    ToolCallPart,
    TurnEnd,
    TurnEndKind,
    TurnStart,
)
from acp_agent.logs import get_logger
from acp_agent.model.base import Usage
from acp_agent.permissions.book import RuleBook
from acp_agent.sandbox.guard import Sandbox, SessionSandbox
from acp_agent.tools.base import ToolContext
from acp_agent.tools.permissions import Permissions
from acp_agent.transport.connection import Connection
from acp_agent.turn.compaction import CompactionProgress
from acp_agent.turn.ports import Notice, NoticeKind, Severity, new_id
from acp_agent.turn.toolrun import ToolRunner

log = get_logger("acp_agent.acp")

COST_CURRENCY = "USD"
"""Providers report cost in dollars (OpenRouter's credits are dollars); configured prices are."""


STOP_REASONS = {
    TurnEndKind.COMPLETED: "end_turn",
    TurnEndKind.CANCELLED: "cancelled",
    TurnEndKind.INTERRUPTED: "cancelled",
}
"""``_acp_agent/turn_ended``'s ``stopReason`` of a ``turn/end`` kind: the prompt answer's words
where there is one (``max_tokens``, ``max_turn_requests``), else the kind (``error``)."""

REPLAY_BLOCK = 64
"""About how many replayed ``session/update`` frames are queued at once (``AcpObserver.replay``):
blocks of 256 measured slower on a 100k replay (scratch runs, interleaved with 64)."""


class AcpObserver:
    def __init__(
        self,
        conn: Peer,
        session_id: str,
        catalog: projection.ToolCatalog,
        compaction_updates: bool = False,
        *,
        notices: bool = False,
        names: projection.ToolNames | None = None,
        cursor: Cursor | None = None,
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.catalog = catalog
        self.compaction_updates = compaction_updates
        self.notices = notices
        self.names: projection.ToolNames = {} if names is None else names
        """Tool names by ``toolCallId`` until the call's result (``projection.ToolNames``)."""
        self.cursor = Cursor() if cursor is None else cursor
        """The ``seq`` of every update (``cursor.py``), shared with the tools' progress."""
        self.cost = 0.0
        """What this session's requests cost in this process (``usage_update.cost``)."""
        self.running_turn: int | None = None
        """The turn running now, from the journal's ``turn/start`` and ``turn/end``."""
        self.announce_end = False
        """A client attached during the running turn: its end is sent as
        ``_acp_agent/turn_ended`` (§13), the prompt's answer going to the one that sent it."""

    async def _update(self, update: SessionUpdate, *, urgent: bool = True) -> None:
        """Urgent unless streamed: the actor must never wait on a client that is not reading
        (it could not commit a turn or honour a cancel); streamed deltas and replays wait."""
        notification = SessionNotification(self.session_id, self.cursor.stamp(update))
        await self.conn.notify("session/update", notification, urgent=urgent)

    def start_at(self, entries: Sequence[Entry]) -> None:
        """The session was opened with ``entries``: its updates are numbered after them."""
        if entries:
            self.cursor.start_at(entries[-1].seq)

    async def appended(self, entry: Entry) -> None:
        self.cursor.at_entry(entry)
        for update in self._project(entry, live=True):
            await self._update(update)
        match entry.event:
            case TurnStart(turn=turn):
                self.running_turn = turn
            case TurnEnd(turn=turn, reason=reason):
                self.running_turn = None
                await self._turn_ended(turn, reason.kind)

    async def _turn_ended(self, turn: int, kind: TurnEndKind) -> None:
        if not self.announce_end:
            return
        self.announce_end = False
        params = TurnEndedParams(self.session_id, turn, STOP_REASONS.get(kind, str(kind)))
        await self.conn.notify("_acp_agent/turn_ended", params, urgent=True)

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

    async def replay(self, entries: Sequence[Entry], after: int = -1) -> None:
        """``session/load`` (``after`` -1) and ``session/resume`` with ``afterSeq``: the
        updates numbered past ``after`` (``Cursor.since``: the history through the same
        projection as live updates, then what the last turns streamed when the cursor keeps
        it), queued ``REPLAY_BLOCK`` notifications at a time (``Connection.notify_all``: the
        same frames as one ``_update`` each, without a queue turn per frame); each block waits
        for room, as streamed updates do."""
        self.start_at(entries)
        replayed = projection.replay_numbered(
            entries, self.catalog, compaction_updates=self.compaction_updates, names=self.names
        )
        wrap = partial(SessionNotification, self.session_id)
        notifications = map(wrap, self.cursor.since(replayed, after))
        line = self.conn
        while block := list(islice(notifications, REPLAY_BLOCK)):
            if isinstance(line, ClientLine):
                await line.send_replay("session/update", block)
            else:
                await line.notify_all("session/update", block)

    async def attached(self) -> None:
        """A client attached (after its answer): what waited for it goes out, its live updates
        follow (``ClientLine.release``)."""
        if isinstance(self.conn, ClientLine):
            await self.conn.release()


class AcpClient:
    """The client at the other end of one connection, as its sessions see it: the connection,
    and the capabilities its ``initialize`` advertised (until then, none). Builds each session's
    observer and its tools' view of the client."""

    def __init__(
        self, conn: Connection, rules: RuleBook | None = None, *, keep_log: bool = False
    ) -> None:
        self.conn = conn
        self.capabilities = ClientCapabilities()
        self.rules = rules or RuleBook()
        """The permission rules of the process (config, and the state dir's project rules)."""
        self.keep_log = keep_log
        """Each session keeps what its last turns sent, and speaks through a ``ClientLine``
        that can move to another connection: for a client that reattaches (§13)."""
        self._lines: dict[str, ClientLine] = {}

    def line(self, session_id: str) -> Peer:
        """What a session speaks to: this connection, or (``keep_log``) its own line to it."""
        if not self.keep_log:
            return self.conn
        line = self._lines.get(session_id)
        if line is None:
            line = self._lines[session_id] = ClientLine(self.conn)
        return line

    def observer(self, header: SessionHeader, tools: ToolRunner) -> AcpObserver:
        caps, progress = self.capabilities, tools.context.progress
        if isinstance(progress, AcpToolProgress):
            names, cursor = progress.names, progress.cursor
        else:
            names, cursor = None, Cursor(keep_log=self.keep_log)
        return AcpObserver(
            self.line(header.id),
            header.id,
            tools,
            caps.compaction_updates,
            notices=caps.notices,
            names=names,
            cursor=cursor,
        )

    def client_fs(self, session_id: str) -> AcpClientFs | None:
        if not self.capabilities.fs.read_text_file:
            return None
        return AcpClientFs(self.line(session_id), session_id)

    def tool_context(self, header: SessionHeader, sandbox: Sandbox) -> ToolContext:
        """The tools' view of a session: each client service only if it was advertised, the
        process's ``sandbox`` around its commands."""
        caps, sid = self.capabilities, header.id
        conn = self.line(sid)
        return ToolContext(
            sid,
            Path(header.cwd),
            fs=self.client_fs(sid),
            writer=AcpClientWriter(conn, sid) if caps.fs.write_text_file else None,
            terminals=AcpTerminals(conn, sid) if caps.terminal else None,
            progress=AcpToolProgress(
                conn, sid, Cursor(keep_log=self.keep_log), caps.subagents is not None
            ),
            permissions=Permissions(
                asker=AcpPermissionAsker(conn, sid),
                session_id=sid,
                rules=self.rules.for_session(header.cwd),
            ),
            elicitation=AcpElicitation(conn, sid) if caps.elicitation_form else None,
            sandbox=SessionSandbox(sandbox),
        )


class AcpClientFs:
    def __init__(self, conn: Peer, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        params = ReadTextFileParams(self.session_id, path, line, limit)
        result = await self.conn.request("fs/read_text_file", params, ReadTextFileResult)
        return result.content
