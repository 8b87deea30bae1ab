"""Issue 14.1: inside a tool batch, each result is durable before the next tool of the batch
starts, and the client (the observer) hears of a result only once it is durable.

A crash between two tools of a batch used to lose the first tool's result (it waited in the
writer's buffer for the step-end barrier), so recovery wrote it ``interrupted`` although the tool
had run and the client had been told ``completed``. Here the journal file records which of its
bytes each ``fdatasync`` covered, a ``probe`` tool notes at its start which results were durable,
and the observer notes at each result whether it was durable when it was told.
"""

from __future__ import annotations

import json
from pathlib import Path

from acp_agent.api import Agent
from acp_agent.content import TextContent
from acp_agent.journal.events import Entry, ToolResult
from acp_agent.journal.files import FileFactory, JournalFile, open_journal_file
from acp_agent.model.script import ScriptModel
from acp_agent.session.wiring import NullObserver
from acp_agent.tools.base import Location, ToolContext, ToolKind, ToolOutput
from acp_agent.turn.vocabulary import Finished, StopReason
from tests.session.support import lines, types


class Disk:
    """One new journal's bytes as written, and how many of them the last ``fdatasync`` covered."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.synced = 0

    def factory(self) -> FileFactory:
        def open_file(path: Path, *, create: bool) -> JournalFile:
            return _Recorded(open_journal_file(path, create=create), self)

        return open_file

    def durable_results(self) -> list[str]:
        """The callIds of the ``tool/result`` lines on disk."""
        durable = bytes(self.data[: self.synced]).split(b"\n")[:-1]
        events = [json.loads(raw) for raw in durable]
        return [e["data"]["callId"] for e in events if e.get("type") == "tool/result"]


class _Recorded:
    def __init__(self, inner: JournalFile, disk: Disk) -> None:
        self.inner = inner
        self.disk = disk

    @property
    def size(self) -> int:
        return self.inner.size

    def write(self, data: bytes) -> int:
        written = self.inner.write(data)
        self.disk.data += data[:written]
        return written

    def fdatasync(self) -> None:
        self.inner.fdatasync()
        self.disk.synced = len(self.disk.data)

    def truncate(self, size: int) -> None:
        self.inner.truncate(size)
        del self.disk.data[size:]
        self.disk.synced = min(self.disk.synced, size)

    def close(self) -> None:
        self.inner.close()


class Probe:
    """``probe {n}``: notes which tool results were durable when it started."""

    name = "probe"
    description = "note what is durable"
    kind = ToolKind.OTHER
    parameters: dict[str, object] = {"type": "object"}  # noqa: RUF012

    def __init__(self, disk: Disk) -> None:
        self.disk = disk
        self.saw: dict[str, list[str]] = {}

    def title(self, arguments: dict[str, object]) -> str:
        return "probe"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        self.saw[ctx.call.id if ctx.call else "?"] = self.disk.durable_results()
        return ToolOutput([TextContent(text="probed")])


class Told(NullObserver):
    """An observer that notes, for each result it is told of, whether it was durable then."""

    def __init__(self, disk: Disk) -> None:
        self.disk = disk
        self.results: list[tuple[str, bool]] = []

    async def appended(self, entry: Entry) -> None:
        if isinstance(entry.event, ToolResult):
            call_id = entry.event.call_id
            self.results.append((call_id, call_id in self.disk.durable_results()))


BATCH = (
    '{"toolCalls": [{"id": "p1", "name": "probe", "arguments": {}},'
    ' {"id": "p2", "name": "probe", "arguments": {}},'
    ' {"id": "p3", "name": "probe", "arguments": {}}]}'
)


async def test_each_result_is_durable_before_the_next_tool_starts_and_before_it_is_told(
    tmp_path: Path,
) -> None:
    disk = Disk()
    probe = Probe(disk)
    told = Told(disk)
    async with Agent.open(
        tmp_path / "state",
        ScriptModel.from_lines(lines(BATCH, '{"text": "done"}')),
        tools=lambda header: [probe],
        file_factory=disk.factory(),
        observer=lambda header: told,
    ) as agent:
        session = await agent.new_session(tmp_path)
        outcome = await (await session.send("probe thrice")).outcome()
        assert isinstance(outcome, Finished) and outcome.stop is StopReason.END_TURN
        assert types(session.entries).count("tool/result") == 3
    assert probe.saw == {"p1": [], "p2": ["p1"], "p3": ["p1", "p2"]}
    assert told.results == [("p1", True), ("p2", True), ("p3", True)]
