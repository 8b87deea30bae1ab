"""Model-visible history, derived from the journal and nothing else.

``derive_messages`` is the one function that turns journal entries into the messages of a model
request. The actor calls it for every request, so what the model sees is, by construction, what
the journal holds at that moment ("model-visible = logged"). Out-of-turn ``user/message``
events are ordinary committed history here: they become user-role messages in journal order,
each keeping its own ``source``; nothing is merged into the direct prompt.

Compaction: only the *last* ``session/compaction`` event counts. The model sees one user-role
message holding its ``summary`` (source ``{"kind": "compaction", "id", "seq"}``, ``seq`` being
the compaction event's own seq), then the messages of every entry with
``seq >= keptFromSeq`` in journal order — the turns kept verbatim, anything appended while the
summary was being written, and everything after the compaction event. Every message is
treated alike whatever its source: an out-of-turn ``user/message`` older than the cut is in the
summary, a newer one is kept verbatim. Earlier compactions are covered by the last one (their
summaries were part of what it summarized), so their events yield nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from acp_agent.journal.events import (
    AssistantMessage,
    Compaction,
    Entry,
    SourceKind,
    SteeringMessage,
    ToolResult,
    UserMessage,
    source,
)
from acp_agent.model.base import AssistantTurn, ModelMessage, ToolTurn, UserTurn


def derive_messages(entries: Sequence[Entry]) -> list[ModelMessage]:
    head, cut = compacted_head(entries)
    return head + messages_of(entry for entry in entries if entry.seq >= cut)


def compacted_head(entries: Sequence[Entry]) -> tuple[list[ModelMessage], int]:
    """The summary message of the last compaction (if any) and the first seq seen verbatim."""
    for entry in reversed(entries):
        if isinstance(entry.event, Compaction):
            return [summary_message(entry.seq, entry.event)], entry.event.kept_from_seq
    return [], 1


def summary_message(seq: int, compaction: Compaction) -> UserTurn:
    return UserTurn(compaction.summary, source(SourceKind.COMPACTION, id=compaction.id, seq=seq))


def messages_of(entries: Iterable[Entry]) -> list[ModelMessage]:
    """The messages of these entries, verbatim (compaction events yield none)."""
    messages: list[ModelMessage] = []
    for entry in entries:
        match entry.event:
            case (
                UserMessage(content=content, source=src)
                | SteeringMessage(content=content, source=src)
            ):
                messages.append(UserTurn(content, src))
            case AssistantMessage(content=parts):
                messages.append(AssistantTurn(parts))
            case ToolResult(call_id=call_id, content=content, is_error=is_error):
                messages.append(ToolTurn(call_id, content, is_error))
            case _:
                pass
    return messages
