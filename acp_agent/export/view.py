"""The transcript a session's journal tells: what both renderers show (``build.py`` makes it).

The journal grammar (``journal/turns.py``) is a sequence of turns with out-of-turn messages
between them; the view keeps that shape. A ``Turn`` holds its direct prompt (the source-``user``
``user/message`` right after its ``turn/start``) and, in journal order, what happened in it:
assistant text, thoughts, tool runs (each ``tool/call`` joined with its ``tool/result`` and the
diffs the result carries, ``tools/display.py``), context drained into it, steering, errors.
Between turns there are injected messages and compactions. Unknown event types are kept as
their raw JSON, so nothing the journal holds is hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

from acp_agent.content import ContentBlock, JsonObject
from acp_agent.journal.events import Source, StepUsage, source_kind
from acp_agent.tools.display import DiffView


@dataclass(frozen=True, slots=True)
class Message:
    """A ``user/message`` (a prompt, or context with its source) or a ``steering/message``."""

    seq: int
    time: int
    source: Source
    content: tuple[ContentBlock, ...]
    steering: bool = False

    @property
    def kind(self) -> str:
        return source_kind(self.source) or "?"


@dataclass(frozen=True, slots=True)
class Said:
    seq: int
    time: int
    text: str


@dataclass(frozen=True, slots=True)
class Thought:
    seq: int
    time: int
    text: str


@dataclass(frozen=True, slots=True)
class ToolRun:
    seq: int
    time: int
    call_id: str
    """The client's id for the call (``toolCallId`` if the journal has one, else ``callId``)."""
    name: str
    arguments: JsonObject
    result: tuple[ContentBlock, ...] | None
    """``None``: no ``tool/result`` for this call in the journal."""
    is_error: bool
    diffs: tuple[DiffView, ...]
    finished: int | None
    """When the result was journaled (ms)."""


@dataclass(frozen=True, slots=True)
class Failure:
    seq: int
    time: int
    message: str


@dataclass(frozen=True, slots=True)
class Other:
    """An event of a type this version does not know, as its raw JSON."""

    seq: int
    time: int
    type: str
    data: str


TurnItem = Message | Said | Thought | ToolRun | Failure | Other


@dataclass(frozen=True, slots=True)
class TurnUsage:
    requests: int
    tool_calls: int
    failed_calls: int
    duration_ms: int | None
    """``None``: the turn has no ``turn/end``."""
    tokens: StepUsage | None = None
    """Its requests' usage added up, as the journal recorded it (``None``: none reported)."""


@dataclass(frozen=True, slots=True)
class Turn:
    number: int
    seq: int
    started: int
    ended: int | None
    reason: str
    """The ``turn/end`` reason kind, or ``open`` when the journal has no ``turn/end`` for it."""
    reason_message: str | None
    prompt: Message | None
    items: tuple[TurnItem, ...]
    usage: TurnUsage


@dataclass(frozen=True, slots=True)
class Compacted:
    seq: int
    time: int
    reason: str
    through_seq: int
    summary: tuple[ContentBlock, ...]


Item = Turn | Message | Compacted | Other


@dataclass(frozen=True, slots=True)
class Transcript:
    session_id: str
    title: str | None
    cwd: str
    created: int
    parent: tuple[str, int] | None
    items: tuple[Item, ...]
    events: int

    @property
    def turns(self) -> list[Turn]:
        return [item for item in self.items if isinstance(item, Turn)]
