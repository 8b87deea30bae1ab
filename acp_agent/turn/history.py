"""Model-visible history, derived from the journal and nothing else.

``derive_messages`` is the one function that turns journal entries into the messages of a model
request. The actor calls it for every request, so what the model sees is, by construction, what
the journal holds at that moment ("model-visible = logged"). ``History`` gives the same list
for a session's growing entries without re-reading them all for every request: it extends its
messages by the entries appended since the last call, and starts over (once) at a compaction.
Out-of-turn ``user/message`` events are ordinary committed history here: they become user-role
messages in journal order, each keeping its own ``source``; nothing is merged into the direct
prompt.

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
from typing import Final

import msgspec

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
            case AssistantMessage(content=parts, reasoning_details=details):
                messages.append(AssistantTurn(parts, details))
            case ToolResult(call_id=call_id, content=content, is_error=is_error):
                messages.append(ToolTurn(call_id, content, is_error))
            case _:
                pass
    return messages


_ENCODER: Final = msgspec.json.Encoder()


def json_size(messages: Iterable[ModelMessage]) -> int:
    """The JSON characters of each message, summed (a list's are these, its brackets and commas)."""
    return sum(len(_ENCODER.encode(message)) for message in messages)


def list_json_size(items: int, items_size: int) -> int:
    """``len(msgspec.json.encode(a_list))`` from its length and ``json_size`` of its items."""
    return 2 + items_size + max(items - 1, 0)


class History:
    """``derive_messages`` of an append-only entry list, kept up to date incrementally.

    ``messages(entries)`` equals ``derive_messages(entries)`` for the list it was last given plus
    any entries appended since; a list that shrank or was replaced (never done by the actor) is
    derived again from scratch. Costs O(new entries) per call, plus O(n) at a compaction.
    ``json_chars`` is the length of those messages' JSON, the size every admission checks
    against the context window, kept the same way: each message is encoded once, when it is
    derived, not the whole history at every prompt.
    """

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._seen = 0
        self._last: Entry | None = None
        self._head: list[ModelMessage] = []
        self._cut = 1
        self._verbatim: list[ModelMessage] = []
        self._size = 0
        """``json_size`` of the head and the verbatim messages."""

    def messages(self, entries: Sequence[Entry]) -> list[ModelMessage]:
        self._catch_up(entries)
        return self._head + self._verbatim

    def json_chars(self, entries: Sequence[Entry], more: Sequence[ModelMessage] = ()) -> int:
        """``len(msgspec.json.encode(self.messages(entries) + more))``."""
        self._catch_up(entries)
        count = len(self._head) + len(self._verbatim) + len(more)
        return list_json_size(count, self._size + json_size(more))

    def _catch_up(self, entries: Sequence[Entry]) -> None:
        if len(entries) < self._seen or (self._seen and entries[self._seen - 1] is not self._last):
            self._reset()
        new = entries[self._seen :]
        if any(isinstance(entry.event, Compaction) for entry in new):
            self._head, self._cut = compacted_head(entries)
            self._verbatim = messages_of(e for e in entries if e.seq >= self._cut)
            self._size = json_size(self._head) + json_size(self._verbatim)
        else:
            added = messages_of(e for e in new if e.seq >= self._cut)
            self._verbatim += added
            self._size += json_size(added)
        self._seen = len(entries)
        self._last = entries[-1] if entries else None
