"""Every ``session/update`` a session sends gets its position, ``_meta.acp_agent.seq``, and a
client that comes back asks for what followed one (docs/contract.md §13).

Theory of operation. ``seq = anchor * SPAN + count``: ``anchor`` is the journal ``seq`` of the
last entry the session projected (``at_entry``, from ``AcpObserver.appended``), ``count`` the
updates sent since (its own projected updates first, then what streams before the next entry:
text and thought chunks, tool progress, usage, notes). So ``seq`` grows with the journal and is
distinct for every update, streamed chunks included, and the journal bounds it.

Replay (``numbered``) gives the updates of entry ``E`` the numbers ``E * SPAN + 1 ..``, as the
live ``appended(E)`` did, and a finished message's text and thought (streamed live as chunks
numbered under the entry before) the numbers just below ``E * SPAN``. It cannot give a streamed
chunk its live number (the journal keeps the finished message, not its deltas), so a
reattaching client gets those from the ``log``:
with ``keep_log`` (a listener with a detach grace) every update sent from the start of the
last ``LOG_TURNS`` turns on is kept, as sent. ``since(entries, after)`` is then the journal's
replay of the entries before the log, then the log, each filtered to ``seq > after``:
``session/load`` is ``since(entries, -1)``, ``session/resume`` with ``afterSeq: N`` is
``since(entries, N)``; a load during a turn replays what that turn has streamed so far. An
``after`` inside an older turn than the log holds falls back to the replay's numbering of its
entries (a restarted process has no log: its whole history is replayed by entry).

If you change how the observer projects an entry, the live and the replayed numbering must stay
the same function of the entry: both go through ``projection.project``'s table.
"""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Iterable, Iterator
from typing import TypeVar

import msgspec

from acp_agent.acp.schema import (
    AgentMessageChunk,
    AgentThoughtChunk,
    SessionUpdate,
    UserMessageChunk,
)
from acp_agent.journal.events import Entry, TurnStart

SPAN = 1 << 20
"""Numbers per journal entry: an entry and what streams until the next one take fewer."""
LOG_TURNS = 2
"""Turns whose updates ``keep_log`` keeps: the running one and the one before."""

STREAMED = (AgentMessageChunk, AgentThoughtChunk)
"""What a live turn streams before its message is an entry."""

U = TypeVar("U", bound=SessionUpdate)


def stamped(update: U, seq: int) -> U:
    """``update`` with ``seq`` in its own ``_meta.acp_agent`` (the rest of its ``_meta`` kept)."""
    meta = dict(update.meta or {})
    ours = meta.get("acp_agent")
    meta["acp_agent"] = {**ours, "seq": seq} if isinstance(ours, dict) else {"seq": seq}
    return msgspec.structs.replace(update, meta=meta)


def seq_of(update: SessionUpdate) -> int:
    ours = (update.meta or {}).get("acp_agent")
    seq = ours.get("seq") if isinstance(ours, dict) else None
    return seq if isinstance(seq, int) else -1


def numbers(seq: int, updates: list[SessionUpdate]) -> list[int]:
    """The numbers of entry ``seq``'s replayed ``updates``. What live projection sends of the
    entry is numbered ``seq * SPAN + 1 ..``; a message's text and thought, streamed live before
    the entry existed (numbered under the entry before), lead its replayed updates and take the
    numbers just below ``seq * SPAN``: so every update that live and replay both send has the
    same number in both."""
    lead = 0
    while lead < len(updates) and isinstance(updates[lead], STREAMED):
        lead += 1
    below = [seq * SPAN - lead + i for i in range(lead)]
    return below + [seq * SPAN + i for i in range(1, len(updates) - lead + 1)]


class Cursor:
    """One session's numbering of its updates, and (``keep_log``) what it recently sent."""

    def __init__(self, *, keep_log: bool = False) -> None:
        self.anchor = 0
        self.count = 0
        self.keep_log = keep_log
        self.log: deque[SessionUpdate] = deque()
        self._turn_starts: deque[int] = deque()
        """The journal seq of each turn the log holds, oldest first."""

    @property
    def holds_turns(self) -> bool:
        """The log holds a turn (this process ran one): a reattach can resume inside it."""
        return bool(self._turn_starts)

    def start_at(self, last_seq: int) -> None:
        """The session's journal ends at ``last_seq`` (at open): numbering goes on after it."""
        if last_seq > self.anchor:
            self.anchor, self.count = last_seq, 0

    def at_entry(self, entry: Entry) -> None:
        if entry.seq > self.anchor:
            self.anchor, self.count = entry.seq, 0
        if self.keep_log and isinstance(entry.event, TurnStart):
            self._turn_starts.append(entry.seq)
            while len(self._turn_starts) > LOG_TURNS:
                self._turn_starts.popleft()
                floor = self._turn_starts[0] * SPAN
                while self.log and seq_of(self.log[0]) < floor:
                    self.log.popleft()

    def stamp(self, update: U) -> U:
        self.count += 1
        sent = stamped(update, self.anchor * SPAN + self.count)
        if self.keep_log and self._turn_starts:
            self.log.append(sent)
        return sent

    def numbered(self, seq: int, updates: list[SessionUpdate]) -> list[SessionUpdate]:
        """An entry's replayed updates, numbered as ``appended`` numbered them live
        (``numbers``)."""
        return [stamped(u, n) for u, n in zip(updates, numbers(seq, updates), strict=True)]

    def since(
        self, replayed: Iterable[tuple[int, list[SessionUpdate]]], after: int
    ) -> Iterator[SessionUpdate]:
        """The updates whose seq is greater than ``after``: ``replayed`` (``(entry seq,
        updates)`` of the journal, ``replay_numbered``) up to the log, then the log. A prompt
        is not echoed live, so inside the log a prompt's ``user_message_chunk``s come from the
        journal, in their place. Numbering goes on past everything replayed."""
        log_from = self._turn_starts[0] if self._turn_starts and self.log else None
        logged = list(self.log) if log_from is not None else []
        in_log = {seq_of(update) // SPAN for update in logged}
        prompts: list[SessionUpdate] = []
        for seq, updates in replayed:
            numbered = self.numbered(seq, updates)
            if seq == self.anchor and numbered:
                self.count = max(self.count, seq_of(numbered[-1]) - seq * SPAN)
            if log_from is None or seq < log_from:
                yield from (update for update in numbered if seq_of(update) > after)
            elif seq not in in_log and all(isinstance(u, UserMessageChunk) for u in updates):
                prompts.extend(update for update in numbered if seq_of(update) > after)
        later = (update for update in logged if seq_of(update) > after)
        yield from heapq.merge(later, prompts, key=seq_of)
