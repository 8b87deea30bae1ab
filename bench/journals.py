"""Synthetic session journals for the replay benchmark, written with the project's own codec.

Each turn is eleven events, the shape of a real coding turn: the prompt, ``turn/start``, a step
whose assistant message says something and calls ``read_file``, the call and its result, a
second step that answers, ``step/end``, ``turn/end``. Out-of-turn injected ``user/message``s pad
the journal to the exact event count asked for, so it ends between turns (nothing to repair).
"""

from __future__ import annotations

import os
from pathlib import Path

from acp_agent.content import TextContent
from acp_agent.journal.events import (
    AssistantMessage,
    Entry,
    Event,
    SessionHeader,
    SourceKind,
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
from acp_agent.journal.format import encode_entry, encode_header

T0 = 1_700_000_000_000
PROSE = "The quick brown fox jumps over the lazy dog; then it reads the file and reports. " * 3
RESULT = "def main() -> None:\n    print('hello')\n" * 8


def turn_events(turn: int) -> list[Event]:
    call_id = f"call-{turn}"
    arguments: dict[str, object] = {"path": f"src/module_{turn % 50}.py"}
    return [
        UserMessage(f"p{turn}", [TextContent(text=f"Prompt {turn}: {PROSE[:120]}")], _USER),
        TurnStart(turn),
        StepStart(turn, 1),
        AssistantMessage(
            turn, 1, f"a{turn}.1", [TextPart(PROSE), ToolCallPart(call_id, "read_file", arguments)]
        ),
        ToolCall(turn, 1, call_id, "read_file", arguments),
        ToolResult(turn, 1, call_id, [TextContent(text=RESULT)], False),
        StepEnd(turn, 1),
        StepStart(turn, 2),
        AssistantMessage(turn, 2, f"a{turn}.2", [TextPart(PROSE)]),
        StepEnd(turn, 2),
        TurnEnd(turn, TurnEndReason(TurnEndKind.COMPLETED)),
    ]


_USER = source(SourceKind.USER)
_CLIENT = source(SourceKind.CLIENT)


def write_journal(state_dir: Path, session_id: str, cwd: Path, events: int) -> Path:
    """``<state_dir>/sessions/<session_id>/journal.jsonl`` holding exactly ``events`` events."""
    directory = state_dir / "sessions" / session_id
    directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(state_dir / "sessions", 0o700)
    path = directory / "journal.jsonl"
    chunks = [encode_header(SessionHeader(id=session_id, created_at=T0, cwd=str(cwd)))]
    seq = 0
    turn = 0
    while seq < events:
        turn += 1
        batch = turn_events(turn)
        if seq + len(batch) > events:
            batch = [
                UserMessage(f"ctx{seq + i}", [TextContent(text=PROSE[:80])], _CLIENT)
                for i in range(events - seq)
            ]
        for event in batch:
            seq += 1
            chunks.append(encode_entry(Entry(seq, T0 + seq, event)))
    path.write_bytes(b"".join(chunks))
    path.chmod(0o600)
    return path
