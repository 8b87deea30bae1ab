"""The journal's vocabulary: the session header and every event type.

A journal line is an envelope ``{"seq", "time", "type", "data"}`` (plus a checksum, see
``format.py``). The ``type`` string lives in the envelope, not in ``data``, so the event
structs here are untagged and ``EVENT_TYPES`` maps the wire name to its struct. Unknown
types found in a journal are kept as ``UnknownEvent`` (raw data) and written back unchanged.

If you add an event type: add it to ``EventType``, ``EVENT_TYPES``, ``Event``, the invariant
table in ``invariant.py``, the projection in ``acp/projection.py`` and the history derivation
in ``turn/history.py``.

The structs that hold containers (``Entry``, the events with lists or dicts, and
``TurnEndReason``, whose enum member msgspec counts as one) are declared ``gc=False``: the
cyclic garbage collector does not track them (``tests/journal/test_bulk.py`` checks). A loaded
session keeps every entry of its history, and a collector tracking them re-scans the whole
history again and again while the session is loaded and replayed (the reader pauses it while
parsing for the same reason). They cannot take part in a cycle: they are frozen, and what
they hold is JSON data and content blocks, never an entry or an event. Keep it that way (a
struct that can reach itself must not be ``gc=False``: such a cycle would never be freed).

``session/compaction`` is session metadata, declared standalone (between turns only): it
records that the model-visible history up to ``throughSeq`` was replaced by ``summary`` and
that history resumes verbatim at ``keptFromSeq`` (see ``turn/history.py``).
"""

from __future__ import annotations

from enum import StrEnum
from typing import TypeVar

import msgspec

from acp_agent.content import ContentBlock, JsonObject

Source = JsonObject
"""``{"kind": str, ...}``. Open by design: unknown kinds and extra fields are preserved."""


class SourceKind(StrEnum):
    USER = "user"
    CLIENT = "client"
    HOOK = "hook"
    TOOL = "tool"
    SESSION_REF = "session-ref"
    PLUGIN = "plugin"
    SKILL = "skill"
    """A skill's body, injected when the user invokes it (``commands/skills.py``); has ``name``."""
    AGENT = "agent"
    """Something the agent did itself out of turn that the model should know of: ``/undo``
    (``name: "undo"``, ``turn``: the turn whose file changes it reverted)."""
    TASK = "task"
    """A background task's ending (``tools/background.py``); has ``id``, the task's id."""
    COMPACTION = "compaction"
    """Not a ``user/message`` source: tags the model message a compaction's summary becomes."""


def source(kind: SourceKind | str, **fields: object) -> Source:
    return {"kind": str(kind), **fields}


def source_kind(src: Source) -> str:
    kind = src.get("kind")
    return kind if isinstance(kind, str) else ""


class EventType(StrEnum):
    USER_MESSAGE = "user/message"
    TURN_START = "turn/start"
    TURN_END = "turn/end"
    STEP_START = "step/start"
    STEP_END = "step/end"
    STEERING_MESSAGE = "steering/message"
    ASSISTANT_MESSAGE = "assistant/message"
    TOOL_CALL = "tool/call"
    TOOL_RESULT = "tool/result"
    AGENT_ERROR = "agent/error"
    COMPACTION = "session/compaction"


class TurnEndKind(StrEnum):
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    ERROR = "error"
    MAX_TOKENS = "max_tokens"
    MAX_TURN_REQUESTS = "max_turn_requests"
    INTERRUPTED = "interrupted"


class Parent(msgspec.Struct, frozen=True, rename="camel"):
    session_id: str
    seq: int


class SessionHeader(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    id: str
    created_at: int
    cwd: str
    type: str = "session"
    version: int = 1
    parent: Parent | None = None
    mcp_servers: list[JsonObject] | None = None


# -- assistant content --------------------------------------------------------------------


class TextPart(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    text: str


class ThoughtPart(msgspec.Struct, frozen=True, tag="thought", tag_field="type"):
    text: str


class ToolCallPart(msgspec.Struct, frozen=True, gc=False, tag="tool-call", tag_field="type"):
    id: str
    name: str
    arguments: JsonObject


AssistantPart = TextPart | ThoughtPart | ToolCallPart


# -- events -------------------------------------------------------------------------------


class UserMessage(msgspec.Struct, frozen=True, gc=False):
    id: str
    content: list[ContentBlock]
    source: Source


class TurnStart(msgspec.Struct, frozen=True):
    turn: int


class TurnEndReason(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    kind: TurnEndKind
    message: str | None = None


class TurnEnd(msgspec.Struct, frozen=True, gc=False):
    turn: int
    reason: TurnEndReason


class StepStart(msgspec.Struct, frozen=True):
    turn: int
    step: int


class StepEnd(msgspec.Struct, frozen=True):
    turn: int
    step: int


class SteeringMessage(msgspec.Struct, frozen=True, gc=False):
    turn: int
    id: str
    content: list[ContentBlock]
    source: Source


class StepUsage(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    """What one model request used, as its provider reported it: tokens, and the cost where the
    provider reports one (OpenRouter's ``usage.cost``)."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cost: float | None = None

    def plus(self, more: StepUsage) -> StepUsage:
        return StepUsage(
            self.input_tokens + more.input_tokens,
            self.output_tokens + more.output_tokens,
            _sum(self.reasoning_tokens, more.reasoning_tokens),
            _sum(self.cached_tokens, more.cached_tokens),
            _sum(self.cost, more.cost),
        )


_N = TypeVar("_N", int, float)


def _sum(a: _N | None, b: _N | None) -> _N | None:
    return None if a is None and b is None else (a or 0) + (b or 0)


class AssistantMessage(
    msgspec.Struct,
    frozen=True,
    gc=False,
    omit_defaults=True,
    rename={"reasoning_details": "reasoningDetails"},
):
    turn: int
    step: int
    id: str
    content: list[AssistantPart]
    reasoning_details: tuple[msgspec.Raw, ...] = ()
    """Opaque items the provider wants back with this message on later requests (OpenRouter's
    ``reasoning_details``), each a JSON object kept verbatim; absent when there are none."""
    usage: StepUsage | None = None
    """What the request that produced this message used; absent when the provider reported
    nothing (the script model without ``usage``). For the record only: no history reads it."""


class ToolCall(
    msgspec.Struct,
    frozen=True,
    gc=False,
    omit_defaults=True,
    rename={"call_id": "callId", "tool_call_id": "toolCallId"},
):
    turn: int
    step: int
    call_id: str
    """The model's own id for the call: what its history says (``turn/history.py``)."""
    name: str
    arguments: JsonObject
    tool_call_id: str | None = None
    """The client's id for the call (ACP ``toolCallId``) when it is not ``call_id``: the model
    reused an id an earlier call of the session had (``journal/callids.py``); absent otherwise."""


class Checkpoint(msgspec.Struct, frozen=True, gc=False):
    """What one tool call changed under one root, as the shadow repository recorded it
    (``checkpoints/``): ``files`` (relative to ``root``, POSIX) as tree ``before`` holds them
    before the change and as tree ``after`` holds them after it; a file a tree does not hold did
    not exist (or was not recorded: ignored by ``.gitignore``)."""

    root: str
    before: str
    after: str
    files: tuple[str, ...]


class ToolResult(
    msgspec.Struct,
    frozen=True,
    gc=False,
    omit_defaults=True,
    rename={"call_id": "callId", "is_error": "isError", "tool_call_id": "toolCallId"},
):
    turn: int
    step: int
    call_id: str
    content: list[ContentBlock]
    is_error: bool
    tool_call_id: str | None = None
    """Its call's ``tool_call_id``, copied (absent when the call has none)."""
    checkpoints: tuple[Checkpoint, ...] = ()
    """The files the call changed under each root, recorded before and after (``Checkpoint``);
    absent when it changed none (or nothing could be recorded)."""


class ErrorInfo(msgspec.Struct, frozen=True, omit_defaults=True):
    message: str
    code: str | None = None


class AgentError(msgspec.Struct, frozen=True, gc=False, omit_defaults=True):
    turn: int
    error: ErrorInfo
    step: int | None = None


class CompactionReason(StrEnum):
    MANUAL = "manual"
    """The user asked (``/compact``)."""
    AUTO = "auto"
    """The history neared the model's context window before a prompt was admitted."""


class Compaction(msgspec.Struct, frozen=True, gc=False, rename="camel"):
    """``session/compaction``: the history through ``through_seq`` is now ``summary``.

    ``kept_from_seq`` is ``through_seq + 1``: the first seq still seen verbatim. The cut lies
    between turns, so no tool call is separated from its result.
    """

    id: str
    summary: list[ContentBlock]
    through_seq: int
    kept_from_seq: int
    reason: CompactionReason


class UnknownEvent(msgspec.Struct, frozen=True, gc=False):
    """An event of a type this version does not know; kept verbatim."""

    type: str
    data: msgspec.Raw


Event = (
    UserMessage
    | TurnStart
    | TurnEnd
    | StepStart
    | StepEnd
    | SteeringMessage
    | AssistantMessage
    | ToolCall
    | ToolResult
    | AgentError
    | Compaction
    | UnknownEvent
)

EVENT_TYPES: dict[EventType, type[Event]] = {
    EventType.USER_MESSAGE: UserMessage,
    EventType.TURN_START: TurnStart,
    EventType.TURN_END: TurnEnd,
    EventType.STEP_START: StepStart,
    EventType.STEP_END: StepEnd,
    EventType.STEERING_MESSAGE: SteeringMessage,
    EventType.ASSISTANT_MESSAGE: AssistantMessage,
    EventType.TOOL_CALL: ToolCall,
    EventType.TOOL_RESULT: ToolResult,
    EventType.AGENT_ERROR: AgentError,
    EventType.COMPACTION: Compaction,
}

_TYPE_OF: dict[type[Event], EventType] = {cls: name for name, cls in EVENT_TYPES.items()}


def event_type(event: Event) -> str:
    if isinstance(event, UnknownEvent):
        return event.type
    return _TYPE_OF[type(event)]


class Entry(msgspec.Struct, frozen=True, gc=False):
    """One committed (or admitted, not yet flushed) journal event with its coordinates."""

    seq: int
    time: int
    event: Event

    @property
    def type(self) -> str:
        return event_type(self.event)
