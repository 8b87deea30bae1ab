"""Twins for tool tests: scripted tool calls for the wire tests, a scripted permission asker, a recording progress sink, a tool context
in a temporary workspace, and a ``RecordingClient`` that also runs ``terminal/*`` requests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp.schema import (
    ClientCapabilities,
    CreateTerminalResponse,
    EnvVariable,
    FileSystemCapabilities,
    KillTerminalResponse,
    PermissionOption,
    ReleaseTerminalResponse,
    RequestPermissionResponse,
    TerminalExitStatus,
    TerminalOutputResponse,
    ToolCallUpdate,
    WaitForTerminalExitResponse,
)

from acp_agent.tools.base import ToolContext
from acp_agent.tools.display import View
from acp_agent.tools.permissions import Mode, PermissionRequest, Permissions
from tests.integration.support import write_script
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordingClient


def call(call_id: str, name: str, **arguments: Any) -> JsonObject:
    """A scripted model's tool call."""
    return {"id": call_id, "name": name, "arguments": arguments}


def script(tmp_path: Path, *calls: JsonObject, steps: int = 1) -> Path:
    """One step per call (so each call's result is seen before the next), then "done"."""
    lines = [{"toolCalls": [c]} for c in calls]
    return write_script(tmp_path / "script.jsonl", *lines, *[{"text": "done"}] * steps)


def finals(updates: list[JsonObject]) -> list[JsonObject]:
    """The tool call updates that end a call."""
    return [u for u in updates if u.get("status") in ("completed", "failed")]


@dataclass
class ScriptedAsker:
    """Answers each permission request with the next of ``answers`` (an option id or None)."""

    answers: list[str | None] = field(default_factory=list)
    asked: list[PermissionRequest] = field(default_factory=list)

    async def ask(self, request: PermissionRequest) -> str | None:
        self.asked.append(request)
        return self.answers.pop(0)


@dataclass
class RecordingProgress:
    shown: list[tuple[str, list[View]]] = field(default_factory=list)
    outputs: list[tuple[str, str]] = field(default_factory=list)

    async def show(self, call_id: str, views: list[View]) -> None:
        self.shown.append((call_id, views))

    async def output(self, call_id: str, text: str) -> None:
        self.outputs.append((call_id, text))


def context(
    workspace: Path,
    mode: Mode = Mode.FULL_ACCESS,
    asker: ScriptedAsker | None = None,
    roots: tuple[Path, ...] = (),
) -> ToolContext:
    """A tool context on the local disk (no client services)."""
    return ToolContext("s1", workspace, roots=roots, permissions=Permissions(mode, asker))


@dataclass
class _Terminal:
    process: asyncio.subprocess.Process
    output: bytearray
    reader: asyncio.Task[None]
    limit: int | None


class TerminalClient(RecordingClient):
    """A client advertising ``terminal``: each terminal is a real subprocess in its own group."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.terminals: dict[str, _Terminal] = {}
        self.created: list[tuple[str, list[str], str | None]] = []
        self.released: list[str] = []
        self.killed: list[str] = []

    def capabilities(self) -> ClientCapabilities:
        fs = self.advertise_fs
        return ClientCapabilities(
            fs=FileSystemCapabilities(read_text_file=fs, write_text_file=fs), terminal=True
        )

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
        process = await asyncio.create_subprocess_exec(
            command,
            *(args or []),
            cwd=cwd,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        terminal_id = f"term-{len(self.terminals) + 1}"
        output = bytearray()
        reader = asyncio.create_task(_pump(process, output))
        self.terminals[terminal_id] = _Terminal(process, output, reader, output_byte_limit)
        self.created.append((command, list(args or []), cwd))
        return CreateTerminalResponse(terminal_id=terminal_id)

    async def terminal_output(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> TerminalOutputResponse:
        terminal = self.terminals[terminal_id]
        data = bytes(terminal.output)
        truncated = terminal.limit is not None and len(data) > terminal.limit
        if truncated and terminal.limit is not None:
            data = data[-terminal.limit :]
        code = terminal.process.returncode
        status = None if code is None else _status(code)
        return TerminalOutputResponse(
            output=data.decode("utf-8", "replace"), truncated=truncated, exit_status=status
        )

    async def wait_for_terminal_exit(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> WaitForTerminalExitResponse:
        terminal = self.terminals[terminal_id]
        code = await terminal.process.wait()
        await terminal.reader
        status = _status(code)
        return WaitForTerminalExitResponse(exit_code=status.exit_code, signal=status.signal)

    async def kill_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> KillTerminalResponse | None:
        self.killed.append(terminal_id)
        _kill(self.terminals[terminal_id].process)
        return KillTerminalResponse()

    async def release_terminal(
        self, session_id: str, terminal_id: str, **kwargs: Any
    ) -> ReleaseTerminalResponse | None:
        self.released.append(terminal_id)
        terminal = self.terminals[terminal_id]
        _kill(terminal.process)
        await terminal.process.wait()
        return ReleaseTerminalResponse()


class HoldingClient(RecordingClient):
    """Holds every permission request until ``release`` is set, then answers ``cancelled``
    (what a client does for the requests of a turn it cancelled)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def request_permission(
        self,
        session_id: str,
        tool_call: ToolCallUpdate,
        options: list[PermissionOption],
        **kwargs: Any,
    ) -> RequestPermissionResponse:
        self.asked.set()
        await self.release.wait()
        self.permission = "cancelled"
        return await super().request_permission(session_id, tool_call, options)


async def _pump(process: asyncio.subprocess.Process, output: bytearray) -> None:
    assert process.stdout is not None
    while chunk := await process.stdout.read(65536):
        output += chunk


def _status(code: int) -> TerminalExitStatus:
    if code < 0:
        return TerminalExitStatus(exit_code=None, signal=signal.Signals(-code).name)
    return TerminalExitStatus(exit_code=code, signal=None)


def _kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)


async def group_gone(pgid: int, within: float = 5.0) -> bool:
    """Whether process group ``pgid`` empties within ``within`` seconds (a killed process takes
    a moment to become a zombie)."""
    deadline = asyncio.get_running_loop().time() + within
    while group_members(pgid):
        if asyncio.get_running_loop().time() > deadline:
            return False
        await asyncio.sleep(0.02)
    return True


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, from ``/proc``.

    ``killpg(pgid, 0)`` would also count zombies nobody reaped yet (say, under a container's
    PID 1 that does not reap), which are gone in every sense that matters here."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # the process ended while we looked
        fields = text[text.rindex(")") + 2 :].split()
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            members.append(int(stat.parent.name))
    return members


DETACH = (
    "setsid -f sh -c 'echo $$ > detached.tmp && mv detached.tmp detached.pid && exec sleep 30'; "
    "until [ -e detached.pid ]; do sleep 0.01; done"
)
"""A command that leaves a process in a session of its own holding the output open for 30 s.
Its pid is in ``detached.pid``, written once it has left the shell's group (a group kill at the
shell's exit would otherwise catch it between ``fork`` and ``setsid``) and before the shell
goes on. End it with ``kill_detached``: no group kill reaches it."""


def kill_detached(pid_file: Path) -> None:
    with contextlib.suppress(OSError, ValueError):
        os.kill(int(pid_file.read_text()), signal.SIGKILL)
