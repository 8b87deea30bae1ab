"""The client-side services tools use, over ACP: permission requests, file writes, terminals,
and views of a running tool call.

Each is built per session by ``AcpObserver.Factory`` only when the client can take it:
``fs/write_text_file`` needs ``fs.writeTextFile``, ``terminal/*`` needs ``terminal``;
``session/request_permission`` and ``session/update`` are baseline client methods. A request the
tool worker abandons (the turn was cancelled) is forgotten by the connection; a late answer is
dropped and logged there.
"""

from __future__ import annotations

from acp_agent.acp import projection
from acp_agent.acp.schema import (
    CreateTerminalParams,
    CreateTerminalResult,
    Empty,
    PermissionOption,
    RequestPermissionParams,
    RequestPermissionResult,
    SessionNotification,
    TerminalOutputResult,
    TerminalParams,
    ToolCallContent,
    ToolCallLocation,
    ToolCallUpdateFields,
    WriteTextFileParams,
)
from acp_agent.errors import PeerError, WireClosed
from acp_agent.tools.client import ExitStatus, TerminalOutput
from acp_agent.tools.display import DiffView, View
from acp_agent.tools.permissions import AskFailed, PermissionRequest
from acp_agent.transport.connection import Connection

_Ack = Empty | None
"""What ``terminal/kill``, ``terminal/release`` and ``fs/write_text_file`` answer."""


class AcpClientWriter:
    def __init__(self, conn: Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def write_text_file(self, path: str, content: str) -> None:
        params = WriteTextFileParams(self.session_id, path, content)
        await self.conn.request("fs/write_text_file", params, _Ack)  # type: ignore[arg-type]


class AcpTerminals:
    def __init__(self, conn: Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    def _params(self, terminal_id: str) -> TerminalParams:
        return TerminalParams(self.session_id, terminal_id)

    async def create(self, command: str, args: list[str], cwd: str, output_byte_limit: int) -> str:
        params = CreateTerminalParams(
            self.session_id, command, args, cwd=cwd, output_byte_limit=output_byte_limit
        )
        result = await self.conn.request("terminal/create", params, CreateTerminalResult)
        return result.terminal_id

    async def output(self, terminal_id: str) -> TerminalOutput:
        params = self._params(terminal_id)
        result = await self.conn.request("terminal/output", params, TerminalOutputResult)
        status = result.exit_status
        exit_status = ExitStatus(status.exit_code, status.signal) if status else None
        return TerminalOutput(result.output, result.truncated, exit_status)

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        params = self._params(terminal_id)
        result = await self.conn.request("terminal/wait_for_exit", params, _ExitResult)
        return ExitStatus(result.exit_code, result.signal)

    async def kill(self, terminal_id: str) -> None:
        await self.conn.request("terminal/kill", self._params(terminal_id), _Ack)  # type: ignore[arg-type]

    async def release(self, terminal_id: str) -> None:
        await self.conn.request("terminal/release", self._params(terminal_id), _Ack)  # type: ignore[arg-type]


class AcpToolProgress:
    def __init__(self, conn: Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def show(self, call_id: str, views: list[View]) -> None:
        update = projection.tool_views(call_id, views)
        await self.conn.notify("session/update", SessionNotification(self.session_id, update))


class AcpPermissionAsker:
    def __init__(self, conn: Connection, session_id: str) -> None:
        self.conn = conn
        self.session_id = session_id

    async def ask(self, request: PermissionRequest) -> str | None:
        call = request.call
        preview: list[ToolCallContent] = [
            projection.view_content(v) for v in request.preview if isinstance(v, DiffView)
        ]
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


class _ExitResult(Empty, frozen=True):
    exit_code: int | None = None
    signal: str | None = None


__all__ = ["AcpClientWriter", "AcpPermissionAsker", "AcpTerminals", "AcpToolProgress"]
