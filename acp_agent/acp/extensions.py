"""Wire types of the ``_acp_agent/*`` extension methods and ``_session/steering``.

The methods are docs/contract.md §4.

Advertised in ``initialize`` as ``agentCapabilities._meta.acp_agent`` (``handshake.CAPABILITIES``,
there so that answering ``initialize`` does not import the journal). ``schemas/`` is generated
from these structs, so renaming a field here is a contract change.
"""

from __future__ import annotations

import msgspec

from acp_agent.content import ContentBlock, JsonObject
from acp_agent.journal.writer import JournalHealth


class InjectParams(msgspec.Struct, frozen=True, rename="camel"):
    session_id: str
    content: list[ContentBlock] | str
    source: JsonObject | None = None
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class InjectResult(msgspec.Struct, frozen=True, rename="camel"):
    message_id: str
    placement: str


class SteerParams(msgspec.Struct, frozen=True, rename="camel"):
    session_id: str
    prompt: list[ContentBlock]
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class SteerResult(msgspec.Struct, frozen=True, omit_defaults=True):
    outcome: str
    reason: str | None = None
    """Set with ``promptRequired``: ``noRunningTurn``."""


def prompt_required(meta: JsonObject | None) -> bool:
    """Whether a ``_session/steering`` request asked not to start a turn when none is running
    (``_meta.steering.idleBehavior: "promptRequired"``, as newer claude-agent-acp / codex-acp
    clients send it): then the agent answers ``promptRequired`` and the client sends a prompt."""
    steering = meta.get("steering") if meta else None
    return isinstance(steering, dict) and steering.get("idleBehavior") == "promptRequired"


class WhenIdleParams(msgspec.Struct, frozen=True, rename="camel"):
    session_id: str
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class WhenIdleResult(msgspec.Struct, frozen=True):
    journal: JournalHealth


class JournalErrorParams(msgspec.Struct, frozen=True, rename="camel"):
    """The ``_acp_agent/journal_error`` notification (agent → client)."""

    session_id: str
    error: str
    unflushed: int


class TurnEndedParams(msgspec.Struct, frozen=True, rename="camel"):
    """The ``_acp_agent/turn_ended`` notification (agent → client): the end of a turn that was
    running when this connection attached to its session (docs/contract.md §13)."""

    session_id: str
    turn: int
    stop_reason: str


class RewindParams(msgspec.Struct, frozen=True, rename="camel"):
    """``_acp_agent/rewind``: fork ``sessionId`` just before turn ``toTurn`` (1, 2, …);
    ``restoreFiles``: also put the files turns ``toTurn`` on changed back as they were before it
    (``force``: even those someone changed since the agent wrote them)."""

    session_id: str
    to_turn: int
    restore_files: bool = False
    force: bool = False
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class RewindResult(msgspec.Struct, frozen=True, rename="camel"):
    session_id: str
