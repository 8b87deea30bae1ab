"""A session journal that holds everything an export shows, hostile text included."""

from __future__ import annotations

import base64
import struct
import zlib
from pathlib import Path

from acp_agent.content import ContentBlock, ImageContent, JsonObject, TextContent
from acp_agent.journal.events import (
    AgentError,
    AssistantMessage,
    AssistantPart,
    Compaction,
    CompactionReason,
    Entry,
    ErrorInfo,
    Event,
    SessionHeader,
    SourceKind,
    SteeringMessage,
    StepEnd,
    StepStart,
    StepUsage,
    TextPart,
    ThoughtPart,
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
from acp_agent.journal.paths import session_dir
from acp_agent.tools.display import DiffView, shown_as
from tests.journal.builders import journal_bytes, write_journal

SESSION_ID = "export-sample"
HOSTILE = '<script>alert("x")</script><img src=x onerror=alert(1)>\x1b[31mred\x07 & "q" \'a\''
HOSTILE_TITLE = "</title><script>alert(1)</script>\x1b]0;pwned\x07 title"
T0 = 1_767_225_600_000


def png(width: int = 48, height: int = 32) -> bytes:
    """A real PNG: a blue-to-orange gradient."""
    rows = b"".join(
        b"\x00" + b"".join(bytes((40 + 4 * x, 90 + y, 200 - 3 * x)) for x in range(width))
        for y in range(height)
    )

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def _text(value: str) -> list[ContentBlock]:
    return [TextContent(text=value)]


def _user(message_id: str, content: list[ContentBlock], kind: str, **fields: object) -> UserMessage:
    return UserMessage(message_id, content, source(kind, **fields))


def _call(turn: int, step: int, call_id: str, name: str, arguments: JsonObject) -> ToolCall:
    return ToolCall(turn, step, call_id, name, arguments)


def _assistant(
    turn: int, step: int, *parts: AssistantPart, usage: StepUsage | None = None
) -> AssistantMessage:
    return AssistantMessage(turn, step, f"a{turn}.{step}", list(parts), usage=usage)


def _turn_one() -> list[Event]:
    image = ImageContent(data=base64.b64encode(png()).decode(), mimeType="image/png")
    diff = DiffView(path="notes.txt", new_text="one\nTWO\nthree\n", old_text="one\ntwo\nthree\n")
    return [
        TurnStart(1),
        _user(
            "p1",
            [TextContent(text="Fix the typo in notes.txt; here is a screenshot."), image],
            "user",
        ),
        StepStart(1, 1),
        _assistant(
            1,
            1,
            ThoughtPart("The second line should be upper case. I will edit it."),
            TextPart("Editing notes.txt."),
            ToolCallPart("call-1", "edit_file", {"path": "notes.txt"}),
            usage=StepUsage(1200, 80, reasoning_tokens=30, cost=0.0021),
        ),
        _call(1, 1, "call-1", "edit_file", {"path": "notes.txt", "old": "two", "new": "TWO"}),
        ToolResult(1, 1, "call-1", [shown_as("Edited notes.txt (1 change).", diff)], False),
        StepEnd(1, 1),
        _user("c2", _text("CI: lint passed on the edit."), "x-ci", job="lint"),
        StepStart(1, 2),
        _assistant(
            1,
            2,
            TextPart("Done: line 2 now reads TWO."),
            usage=StepUsage(1400, 40, cached_tokens=1000, cost=0.0009),
        ),
        StepEnd(1, 2),
        TurnEnd(1, TurnEndReason(TurnEndKind.COMPLETED)),
    ]


def _turn_two() -> list[Event]:
    return [
        TurnStart(2),
        _user("p2", _text("Run the hostile command"), "user"),
        StepStart(2, 1),
        _assistant(2, 1, ToolCallPart("call-1", "run_command", {"command": HOSTILE})),
        ToolCall(2, 1, "call-1", "run_command", {"command": HOSTILE}, tool_call_id="call-1#t2s1"),
        ToolResult(
            2, 1, "call-1", _text(HOSTILE + "\n```\nfenced\n```"), True, tool_call_id="call-1#t2s1"
        ),
        StepEnd(2, 1),
        SteeringMessage(2, "st1", _text("Stop, that is enough."), source(SourceKind.USER)),
        AgentError(2, ErrorInfo(message="model gave up: " + HOSTILE), step=None),
        TurnEnd(2, TurnEndReason(TurnEndKind.ERROR, "model gave up")),
    ]


def events() -> list[Event]:
    return [
        _user("c1", _text("The user prefers short answers. " + HOSTILE), "client"),
        _user(
            "h1", _text("Branch: main, clean."), "hook", hook="prompt_submit", command="git-info"
        ),
        *_turn_one(),
        _user("t1", _text("task 3 exited 0"), "task", id="3"),
        Compaction("k1", _text("Summary: notes.txt fixed."), 15, 16, CompactionReason.MANUAL),
        *_turn_two(),
    ]


def entries(items: list[Event] | None = None) -> list[Entry]:
    return [Entry(seq, T0 + 150 * seq, e) for seq, e in enumerate(items or events(), start=1)]


HEADER = SessionHeader(id=SESSION_ID, created_at=T0, cwd="/work/project")


def write_sample(
    state_dir: Path, session_id: str = SESSION_ID, items: list[Event] | None = None
) -> Path:
    """The sample as a session of ``state_dir`` (title: ``HOSTILE_TITLE``); its directory."""
    directory = session_dir(state_dir, session_id)
    header = SessionHeader(id=session_id, created_at=T0, cwd="/work/project")
    write_journal(directory, journal_bytes(entries(items), header))
    (directory / "title").write_text(HOSTILE_TITLE, encoding="utf-8")
    return directory


def large_events(turns: int) -> list[Event]:
    """``turns`` turns of one tool call each: about 9 events per turn."""
    found: list[Event] = []
    for turn in range(1, turns + 1):
        found += [
            TurnStart(turn),
            _user(f"p{turn}", _text(f"prompt {turn}"), "user"),
            StepStart(turn, 1),
            _assistant(turn, 1, ToolCallPart("c", "read_file", {"path": "a"})),
            ToolCall(turn, 1, "c", "read_file", {"path": "a"}, tool_call_id=f"c#{turn}"),
            ToolResult(turn, 1, "c", _text("line\n" * 20), False, tool_call_id=f"c#{turn}"),
            StepEnd(turn, 1),
            _user(f"i{turn}", _text(f"context {turn}"), "client"),
            TurnEnd(turn, TurnEndReason(TurnEndKind.COMPLETED)),
        ]
    return found
