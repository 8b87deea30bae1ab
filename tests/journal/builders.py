"""Small builders for journal tests: events, numbered entries, raw journal files, a file factory."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from acp_agent.content import ContentBlock, JsonObject, TextContent
from acp_agent.journal.events import (
    AgentError,
    AssistantMessage,
    AssistantPart,
    Entry,
    ErrorInfo,
    Event,
    SessionHeader,
    SourceKind,
    SteeringMessage,
    StepEnd,
    StepStart,
    TextPart,
    ToolCall,
    ToolCallPart,
    ToolResult,
    TurnEnd,
    TurnEndKind,
    TurnEndReason,
    TurnStart,
    UserMessage,
    source,
)
from acp_agent.journal.faults import Fault, FaultPlan, FaultyJournalFile
from acp_agent.journal.files import make_private_dirs, open_journal_file
from acp_agent.journal.format import encode_entry, encode_header
from acp_agent.journal.paths import journal_path

SESSION_ID = "s1"
HEADER = SessionHeader(id=SESSION_ID, created_at=1_700_000_000_000, cwd="/work")
T0 = 1_700_000_000_100


def blocks(text: str) -> list[ContentBlock]:
    return [TextContent(text=text)]


def user(text: str = "hello", *, kind: SourceKind = SourceKind.USER, id: str = "") -> UserMessage:
    return UserMessage(id=id or f"m-{text}", content=blocks(text), source=source(kind))


def steering(turn: int, text: str = "steer") -> SteeringMessage:
    return SteeringMessage(turn, f"st-{text}", blocks(text), source(SourceKind.USER))


def assistant(
    turn: int, step: int, text: str = "ok", calls: Iterable[str] = ()
) -> AssistantMessage:
    parts: list[AssistantPart] = [TextPart(text)]
    parts += [ToolCallPart(id=c, name="read_file", arguments={"path": c}) for c in calls]
    return AssistantMessage(turn, step, f"a{turn}.{step}", parts)


def call(turn: int, step: int, call_id: str, arguments: JsonObject | None = None) -> ToolCall:
    return ToolCall(turn, step, call_id, "read_file", arguments or {"path": call_id})


def result(turn: int, step: int, call_id: str, *, error: bool = False) -> ToolResult:
    return ToolResult(turn, step, call_id, blocks(f"result of {call_id}"), error)


def error(turn: int, step: int | None = None) -> AgentError:
    return AgentError(turn=turn, error=ErrorInfo(message="boom"), step=step)


def end(turn: int, kind: TurnEndKind = TurnEndKind.COMPLETED) -> TurnEnd:
    return TurnEnd(turn, TurnEndReason(kind))


def simple_turn(turn: int, prompt: str = "hi") -> list[Event]:
    """A completed turn with one step and no tools."""
    return [
        TurnStart(turn),
        user(prompt),
        StepStart(turn, 1),
        assistant(turn, 1),
        StepEnd(turn, 1),
        end(turn),
    ]


def tool_turn(turn: int, calls: list[str]) -> list[Event]:
    """A completed turn: step 1 runs a tool batch, step 2 answers."""
    return [
        TurnStart(turn),
        user(f"prompt {turn}"),
        StepStart(turn, 1),
        assistant(turn, 1, "let me look", calls),
        *[call(turn, 1, c) for c in calls],
        *[result(turn, 1, c) for c in calls],
        StepEnd(turn, 1),
        StepStart(turn, 2),
        assistant(turn, 2, "done"),
        StepEnd(turn, 2),
        end(turn),
    ]


def numbered(events: Iterable[Event], first_seq: int = 1) -> list[Entry]:
    return [Entry(seq=s, time=T0 + s, event=e) for s, e in enumerate(events, start=first_seq)]


def journal_bytes(entries: Iterable[Entry], header: SessionHeader = HEADER) -> bytes:
    return encode_header(header) + b"".join(encode_entry(e) for e in entries)


def write_journal(directory: Path, data: bytes) -> Path:
    """Lay down a session directory holding exactly ``data`` as its journal."""
    make_private_dirs(directory)
    path = journal_path(directory)
    path.write_bytes(data)
    return path


class RecordingFactory:
    """A ``FileFactory`` that opens real files behind ``FaultyJournalFile``s and keeps them."""

    def __init__(self) -> None:
        self.faults: list[Fault] = []
        self.files: list[FaultyJournalFile] = []

    def __call__(self, path: Path, *, create: bool) -> FaultyJournalFile:
        file = FaultyJournalFile(open_journal_file(path, create=create), FaultPlan(self.faults))
        self.files.append(file)
        return file

    @property
    def file(self) -> FaultyJournalFile:
        return self.files[-1]
