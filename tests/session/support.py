"""In-process helpers for session-level tests: a scripted agent, a gate tool, the request log."""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from acp_agent.api import Agent
from acp_agent.content import TextContent
from acp_agent.journal.events import Entry, ToolCallPart, event_type
from acp_agent.journal.files import FileFactory, JournalFile, open_journal_file
from acp_agent.model.script import ScriptLine, ScriptModel
from acp_agent.tools.base import Location, Tool, ToolContext, ToolKind, ToolOutput
from acp_agent.turn.admission import Admission
from acp_agent.turn.toolrun import ToolHooks
from tests.support.requests import read_requests

_LINE = msgspec.json.Decoder(ScriptLine)


def lines(*specs: str) -> list[ScriptLine]:
    return [_LINE.decode(spec) for spec in specs]


class GateTool:
    """``gate {name}``: waits until the test opens the gate of that name."""

    name = "gate"
    description = "wait for a gate"
    kind = ToolKind.OTHER
    parameters: dict[str, object] = {"type": "object"}  # noqa: RUF012

    def __init__(self) -> None:
        self.gates: dict[str, anyio.Event] = {}
        self.entered: dict[str, anyio.Event] = {}

    def gate(self, name: str) -> anyio.Event:
        return self.gates.setdefault(name, anyio.Event())

    def reached(self, name: str) -> anyio.Event:
        return self.entered.setdefault(name, anyio.Event())

    def title(self, arguments: dict[str, object]) -> str:
        return "gate"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        name = str(arguments.get("name", ""))
        self.reached(name).set()
        await self.gate(name).wait()
        return ToolOutput([TextContent(text=f"gate {name} passed")])


class GatedSync:
    """A journal file whose fdatasync waits for ``release`` (to catch an unfinished flush)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.release.set()
        self.syncs = 0

    def factory(self) -> FileFactory:
        def open_file(path: Path, *, create: bool) -> JournalFile:
            return _GatedFile(open_journal_file(path, create=create), self)

        return open_file


class _GatedFile:
    def __init__(self, inner: JournalFile, owner: GatedSync) -> None:
        self.inner = inner
        self.owner = owner

    @property
    def size(self) -> int:
        return self.inner.size

    def write(self, data: bytes) -> int:
        return self.inner.write(data)

    def fdatasync(self) -> None:
        assert self.owner.release.wait(10)
        self.owner.syncs += 1
        self.inner.fdatasync()

    def truncate(self, size: int) -> None:
        self.inner.truncate(size)

    def close(self) -> None:
        self.inner.close()


@asynccontextmanager
async def scripted_agent(
    tmp_path: Path,
    script: list[ScriptLine],
    *,
    tools: Sequence[Tool] = (),
    admission: Admission | None = None,
    tool_hooks: ToolHooks | None = None,
    file_factory: FileFactory | None = None,
) -> AsyncIterator[tuple[Agent, Path]]:
    """An Agent over a script model; yields the agent and the request-log path."""
    log = tmp_path / "requests.jsonl"
    model = ScriptModel.from_lines(script, log)
    async with Agent.open(
        tmp_path / "state",
        model,
        admission=admission,
        tool_hooks=tool_hooks,
        tools=(lambda header: tools) if tools else None,
        file_factory=file_factory,
    ) as agent:
        yield agent, log


def requests(log: Path) -> list[dict[str, Any]]:
    return read_requests(log)


def types(entries: Sequence[Entry]) -> list[str]:
    return [event_type(e.event) for e in entries]


def tool_call(name: str, call_id: str, **arguments: object) -> ToolCallPart:
    return ToolCallPart(call_id, name, dict(arguments))
