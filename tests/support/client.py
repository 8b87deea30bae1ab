"""A recording implementation of the official SDK's ``Client`` protocol."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acp import RequestError
from acp.interfaces import Agent
from acp.schema import (
    AgentMessageChunk,
    AgentPlanContentUpdate,
    AgentPlanRemovedUpdate,
    AgentPlanUpdate,
    AgentThoughtChunk,
    AllowedOutcome,
    AvailableCommandsUpdate,
    ClientCapabilities,
    ConfigOptionUpdate,
    CreateElicitationResponse,
    CreateTerminalResponse,
    CurrentModeUpdate,
    DeniedOutcome,
    ElicitationMode,
    EnvVariable,
    FileSystemCapabilities,
    KillTerminalResponse,
    PermissionOption,
    ReadTextFileResponse,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    SessionInfoUpdate,
    TerminalOutputResponse,
    TextContentBlock,
    ToolCallProgress,
    ToolCallStart,
    ToolCallUpdate,
    UsageUpdate,
    UserMessageChunk,
    WaitForTerminalExitResponse,
    WriteTextFileResponse,
)

# The session updates the SDK parses (it drops, with a logged error, updates outside this set).
SessionUpdateModel = (
    UserMessageChunk
    | AgentMessageChunk
    | AgentThoughtChunk
    | ToolCallStart
    | ToolCallProgress
    | AgentPlanUpdate
    | AgentPlanContentUpdate
    | AgentPlanRemovedUpdate
    | AvailableCommandsUpdate
    | CurrentModeUpdate
    | ConfigOptionUpdate
    | SessionInfoUpdate
    | UsageUpdate
)


@dataclass(frozen=True)
class UpdateRecord:
    session_id: str
    update: SessionUpdateModel  # as the SDK parsed it; the transcript has the wire shape


@dataclass(frozen=True)
class PermissionRecord:
    session_id: str
    tool_call: ToolCallUpdate
    options: list[PermissionOption]
    answer: RequestPermissionResponse


class RecordingClient:
    """An ``acp.interfaces.Client`` that records what the agent asks of it.

    ``files`` answers ``fs/read_text_file`` (path -> content); with ``real_fs=True`` paths not in
    ``files`` are read from disk. ``permission`` answers ``session/request_permission``: the first
    option whose ``optionId`` or ``kind`` equals it, or the ``cancelled`` outcome when it is
    ``"cancelled"`` or matches no option. Writes go to ``written``. With ``advertise_fs=False``
    the client advertises no ``fs`` capability. Calls the client did not advertise (``fs`` then,
    terminals and elicitation always) are answered -32601 and listed in ``unexpected_calls``.
    """

    def __init__(
        self,
        *,
        files: Mapping[str, str] | None = None,
        real_fs: bool = False,
        permission: str = "allow_once",
        advertise_fs: bool = True,
    ) -> None:
        self.files = dict(files or {})
        self.advertise_fs = advertise_fs
        self.real_fs = real_fs
        self.permission = permission
        self.updates: list[UpdateRecord] = []
        self.permission_requests: list[PermissionRecord] = []
        self.file_reads: list[tuple[str, str]] = []  # (session id, path)
        self.written: dict[str, str] = {}
        self.ext_calls: list[tuple[str, dict[str, Any]]] = []
        self.unexpected_calls: list[str] = []
        self.agent: Agent | None = None

    def capabilities(self) -> ClientCapabilities:
        """What this client advertises: ``fs`` read and write (unless ``advertise_fs=False``)."""
        fs = self.advertise_fs
        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=False
        )

    def agent_text(self, session_id: str) -> str:
        """The text of every ``agent_message_chunk`` of the session, concatenated."""
        return "".join(
            record.update.content.text
            for record in self.updates
            if record.session_id == session_id
            and isinstance(record.update, AgentMessageChunk)
            and isinstance(record.update.content, TextContentBlock)
        )

    def on_connect(self, conn: Agent) -> None:
        self.agent = conn

    async def session_update(
        self, session_id: str, update: SessionUpdateModel, **kwargs: Any
    ) -> None:
        self.updates.append(UpdateRecord(session_id, update))

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        chosen = next(
            (o for o in options if self.permission in (o.option_id, o.kind)),
            None,
        )
        answer = RequestPermissionResponse(
            outcome=DeniedOutcome(outcome="cancelled")
            if chosen is None
            else AllowedOutcome(outcome="selected", option_id=chosen.option_id)
        )
        self.permission_requests.append(PermissionRecord(session_id, tool_call, options, answer))
        return answer

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        if not self.advertise_fs:
            raise self._unexpected("fs/read_text_file")
        self.file_reads.append((session_id, path))
        content = self.files.get(path)
        if content is None and self.real_fs:
            content = await asyncio.to_thread(_read_text_or_none, Path(path))
        if content is None:
            raise RequestError.resource_not_found(path)
        lines = content.splitlines(keepends=True)
        start = max(line - 1, 0) if line is not None else 0
        end = start + limit if limit is not None else None
        return ReadTextFileResponse(content="".join(lines[start:end]))

    async def write_text_file(
        self, session_id: str, path: str, content: str, **kwargs: Any
    ) -> WriteTextFileResponse | None:
        if not self.advertise_fs:
            raise self._unexpected("fs/write_text_file")
        self.written[path] = content
        return WriteTextFileResponse()

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.ext_calls.append((method, params))
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.ext_calls.append((method, params))

    def _unexpected(self, method: str) -> RequestError:
        self.unexpected_calls.append(method)
        return RequestError.method_not_found(method)

    async def create_terminal(
        self,
        session_id: str,
        command: str,
        args: list[str] | None = None,
        env: list[EnvVariable] | None = None,
        cwd: str | None = None,
        output_byte_limit: int | None = None,
        **kwargs: Any,
    ) -> CreateTerminalResponse:
        raise self._unexpected("terminal/create")

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        raise self._unexpected("terminal/output")

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        raise self._unexpected("terminal/release")

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        raise self._unexpected("terminal/wait_for_exit")

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        raise self._unexpected("terminal/kill")

    async def create_elicitation(
        self, message: str, mode: ElicitationMode, **kwargs: Any
    ) -> CreateElicitationResponse:
        raise self._unexpected("elicitation/create")

    async def complete_elicitation(self, elicitation_id: str, **kwargs: Any) -> None:
        self.unexpected_calls.append("elicitation/complete")


def _read_text_or_none(path: Path) -> str | None:
    return path.read_text(encoding="utf-8") if path.is_file() else None
