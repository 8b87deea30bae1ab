"""The client-side services tools use, over ACP: permission requests, file writes, terminals,
elicitation forms (``elicitation/create``, only when the client advertised ``elicitation.form``)
and views of a running tool call.

Each is built per session by ``AcpClient.tool_context`` only when the client can take it:
``fs/write_text_file`` needs ``fs.writeTextFile``, ``terminal/*`` needs ``terminal``;
``session/request_permission`` and ``session/update`` are baseline client methods. A request the
tool worker abandons (the turn was cancelled) is forgotten by the connection; a late answer is
dropped and logged there.

Terminals: ACP says every terminal the agent creates must be released, and a command still
running must not outlive the agent's interest in it. So ``AcpTerminals.release`` kills the
command first unless it is known to have ended (``wait_for_exit`` answered, or a kill did), then
releases the terminal; and once no answer can arrive (the input ended, the connection is
closing: ``WireClosed``), both are still sent, with ``Connection.post_request``. Every terminal
of a connection not yet released is in its ``TerminalLedger``, so a shutdown releases those
whose tool never got to (``release_all``).
"""

from __future__ import annotations

import weakref

import msgspec

from acp_agent.acp import projection
from acp_agent.acp.cursor import Cursor
from acp_agent.acp.line import ClientLine, Peer
from acp_agent.acp.schema import (
    CreateElicitationParams,
    CreateElicitationResult,
    CreateTerminalParams,
    CreateTerminalResult,
    Empty,
    PermissionOption,
    RequestPermissionParams,
    RequestPermissionResult,
    SessionNotification,
    SessionUpdate,
    SubagentUpdate,
    TerminalOutputResult,
    TerminalParams,
    ToolCallContent,
    ToolCallContentItem,
    ToolCallLocation,
    ToolCallUpdateFields,
    WriteTextFileParams,
)
from acp_agent.content import TextContent
from acp_agent.errors import PeerError, WireClosed
from acp_agent.logs import get_logger
from acp_agent.tools.client import Elicited, ExitStatus, TerminalOutput
from acp_agent.tools.display import ChildView, DiffView, View
from acp_agent.tools.permissions import AskFailed, PermissionRequest
from acp_agent.transport.connection import Connection

log = get_logger("acp_agent.acp")

_Ack = Empty | None
"""What ``terminal/kill``, ``terminal/release`` and ``fs/write_text_file`` answer."""


class AcpClientWriter:
    def __init__(self, conn: Peer, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def write_text_file(self, path: str, content: str) -> None:
        params = WriteTextFileParams(self.session_id, path, content)
        await self.conn.request("fs/write_text_file", params, _Ack)  # type: ignore[arg-type]


class TerminalLedger(msgspec.Struct):
    """The terminals of one connection not yet released, each with whether its command is
    known to have ended. An entry is made when ``terminal/create`` is answered and removed when
    its release is *sent*, so no terminal is released twice."""

    live: dict[tuple[str, str], bool] = msgspec.field(default_factory=dict)

    def opened(self, session_id: str, terminal_id: str) -> None:
        self.live[session_id, terminal_id] = False

    def ended(self, session_id: str, terminal_id: str) -> None:
        if (session_id, terminal_id) in self.live:
            self.live[session_id, terminal_id] = True

    def forget(self, session_id: str, terminal_id: str) -> bool:
        """Take the terminal out; whether its command may still run (unknown ones may)."""
        return not self.live.pop((session_id, terminal_id), False)


_ledgers: weakref.WeakKeyDictionary[Connection, TerminalLedger] = weakref.WeakKeyDictionary()


def ledger_of(conn: Connection) -> TerminalLedger:
    """The connection's ledger (every ``AcpTerminals`` on it shares it)."""
    ledger = _ledgers.get(conn)
    if ledger is None:
        ledger = _ledgers[conn] = TerminalLedger()
    return ledger


def release_all(conn: Connection) -> int:
    """Kill (unless ended) and release every terminal of ``conn`` not released yet, without
    waiting for answers: for a shutdown, when the tools that own them are past caring (no
    answer could reach them) or stuck. How many terminals were told."""
    ledger = ledger_of(conn)
    live = list(ledger.live)
    for session_id, terminal_id in live:
        params = TerminalParams(session_id, terminal_id)
        if ledger.forget(session_id, terminal_id):
            conn.post_request("terminal/kill", params)
        conn.post_request("terminal/release", params)
    if live:
        log.info("terminals_released_at_shutdown", count=len(live))
    return len(live)


class AcpTerminals:
    def __init__(self, conn: Peer, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id
        self._ledger = ledger_of(conn.home if isinstance(conn, ClientLine) else conn)

    def _params(self, terminal_id: str) -> TerminalParams:
        return TerminalParams(self.session_id, terminal_id)

    async def create(self, command: str, args: list[str], cwd: str, output_byte_limit: int) -> str:
        params = CreateTerminalParams(
            self.session_id, command, args, cwd=cwd, output_byte_limit=output_byte_limit
        )
        result = await self.conn.request("terminal/create", params, CreateTerminalResult)
        self._ledger.opened(self.session_id, result.terminal_id)
        return result.terminal_id

    async def output(self, terminal_id: str) -> TerminalOutput:
        params = self._params(terminal_id)
        result = await self.conn.request("terminal/output", params, TerminalOutputResult)
        status = result.exit_status
        if status is not None:
            self._ledger.ended(self.session_id, terminal_id)
        exit_status = ExitStatus(status.exit_code, status.signal) if status else None
        return TerminalOutput(result.output, result.truncated, exit_status)

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        params = self._params(terminal_id)
        result = await self.conn.request("terminal/wait_for_exit", params, _ExitResult)
        self._ledger.ended(self.session_id, terminal_id)
        return ExitStatus(result.exit_code, result.signal)

    async def kill(self, terminal_id: str) -> None:
        await self.conn.request("terminal/kill", self._params(terminal_id), _Ack)  # type: ignore[arg-type]
        self._ledger.ended(self.session_id, terminal_id)

    async def release(self, terminal_id: str) -> None:
        """Kill the command unless it is known to have ended, then release the terminal.

        A kill the client refuses (the command ended meanwhile, say) does not stop the release.
        Once no answer can arrive, both are sent all the same (``_tell``).
        """
        if self._ledger.forget(self.session_id, terminal_id):
            try:
                await self._tell("terminal/kill", terminal_id)
            except PeerError as exc:
                log.info("terminal_kill_refused", terminal_id=terminal_id, error=exc.message)
        await self._tell("terminal/release", terminal_id)

    async def _tell(self, method: str, terminal_id: str) -> None:
        """``method`` for the terminal, answered; or, when no answer can arrive any more, sent
        without waiting for one. ``WireClosed`` only if it could not even be sent. (A request
        already out when the input ended goes out twice: a second kill or release of the same
        terminal is harmless, a terminal left running is not.)"""
        params = self._params(terminal_id)
        try:
            await self.conn.request(method, params, _Ack)  # type: ignore[arg-type]
        except WireClosed:
            if not self.conn.post_request(method, params):
                raise


class AcpToolProgress:
    def __init__(
        self,
        conn: Peer,
        session_id: str,
        cursor: Cursor | None = None,
        subagents: bool = False,
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.cursor = Cursor() if cursor is None else cursor
        """The session's numbering of its updates, shared with its observer (``cursor.py``)."""
        self.subagents = subagents
        """The client advertised ``subagents``: a child is announced with ``subagent_update``."""
        self.names: projection.ToolNames = {}
        """The session's tool names by ``toolCallId``, shared with its observer, which fills
        it as it projects each ``tool_call``."""

    async def show(self, call_id: str, views: list[View]) -> None:
        for child in (v for v in views if isinstance(v, ChildView) and self.subagents):
            announce = SubagentUpdate(child.session_id, child.description, child.description)
            await self._send(announce)
        update = projection.tool_views(call_id, views, self.names.get(call_id))
        await self._send(update)

    async def output(self, call_id: str, text: str) -> None:
        """Streamed: waits while the client is not reading (the tool's own task waits)."""
        update = projection.tool_output(call_id, text)
        await self._send(update)

    async def _send(self, update: SessionUpdate) -> None:
        notification = SessionNotification(self.session_id, self.cursor.stamp(update))
        await self.conn.notify("session/update", notification)


class AcpPermissionAsker:
    def __init__(self, conn: Peer, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def ask(self, request: PermissionRequest) -> str | None:
        call = request.call
        preview: list[ToolCallContent] = [
            projection.view_content(v) for v in request.preview if isinstance(v, DiffView)
        ]
        if request.message is not None:
            preview.append(ToolCallContentItem(TextContent(text=request.message)))
        params = RequestPermissionParams(
            self.session_id,
            ToolCallUpdateFields(
                call.id,
                title=call.title,
                kind=call.kind,
                content=preview or None,
                locations=[ToolCallLocation(path) for path in call.locations] or None,
                raw_input=call.raw_input,
            ),
            [PermissionOption(o.option_id, o.name, str(o.kind)) for o in request.options],
        )
        try:
            result = await self.conn.request(
                "session/request_permission", params, RequestPermissionResult
            )
        except (PeerError, WireClosed) as exc:
            raise AskFailed(str(exc)) from exc
        match result.outcome.outcome, result.outcome.option_id:
            case "cancelled", _:
                return None
            case "selected", str() as option_id:
                return option_id
            case outcome, _:
                raise AskFailed(f"the client answered an unknown outcome {outcome!r}")


class AcpElicitation:
    """``elicitation/create`` in form mode, tied to the session and the tool call."""

    def __init__(self, conn: Peer, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def ask(
        self, call_id: str | None, message: str, requested_schema: dict[str, object]
    ) -> Elicited:
        params = CreateElicitationParams(
            self.session_id, "form", message, requested_schema, call_id
        )
        result = await self.conn.request("elicitation/create", params, CreateElicitationResult)
        return Elicited(result.action, dict(result.content) if result.content else None)


class _ExitResult(Empty, frozen=True):
    exit_code: int | None = None
    signal: str | None = None


__all__ = [
    "AcpClientWriter",
    "AcpElicitation",
    "AcpPermissionAsker",
    "AcpTerminals",
    "AcpToolProgress",
    "TerminalLedger",
    "ledger_of",
    "release_all",
]
