"""Client ids of tool calls: unique in a session, while the model keeps its own ids.

A model names each tool call (``callId``) and sees that name again in its history. OpenAI's ids
are unique, but many local models number the calls of each message (``call_0`` in every step),
and ACP wants a ``toolCallId`` unique in the session: a client merges two cards of one id. So
the client knows a call by its *client id*:

- the model's ``callId`` itself when no earlier call of the session has that client id — the
  common case, so the journals of models with unique ids (and every journal written before
  client ids existed) carry nothing more;
- else ``{callId}#t{turn}s{step}`` (then ``~2``, ``~3`` ... in the unlikely case that is taken
  too), journaled as ``toolCallId`` on the ``tool/call`` and copied to its ``tool/result``.

The id is journaled, not recomputed, so that projecting an entry stays a pure function of that
entry (``acp/projection.py``): live updates, a ``session/load`` replay, a session resumed in a new
process (nothing replayed, the client keeps its cards), a fork and the results recovery writes
all name a call alike. ``CallIds`` hands them out as the session actor appends (``stamp``), and
tells the tool worker a running call's id (``of``), for its updates and permission requests.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec

from acp_agent.journal.events import Entry, Event, ToolCall, ToolResult


def client_id(event: ToolCall | ToolResult) -> str:
    """The id the client knows the call by (ACP ``toolCallId``)."""
    return event.tool_call_id or event.call_id


class CallIds:
    """The client ids one session has used, learnt from its entries as they grow."""

    def __init__(self) -> None:
        self._taken: set[str] = set()
        self._step: tuple[int, int] | None = None
        self._in_step: dict[str, str] = {}
        """callId -> client id, of the calls of the last step that made any."""
        self._seen = 0

    def learn(self, entries: Sequence[Entry]) -> None:
        """Take in the entries added since the last call (``entries`` only ever grows)."""
        for entry in entries[self._seen :]:
            if isinstance(entry.event, ToolCall):
                self._record(entry.event)
        self._seen = len(entries)

    def of(self, turn: int, step: int, call_id: str) -> str:
        """The client id of a call of the last step that made calls (unknown: ``call_id``)."""
        if self._step != (turn, step):
            return call_id
        return self._in_step.get(call_id, call_id)

    def stamp(self, event: Event) -> Event:
        """``event`` as it is to be appended: a ``tool/call`` whose id is taken gets a fresh
        client id, a ``tool/result`` its call's; anything else is returned as it is."""
        match event:
            case ToolCall(call_id=call_id):
                assigned = self._fresh(event)
            case ToolResult(turn=turn, step=step, call_id=call_id):
                assigned = self.of(turn, step, call_id)
            case _:
                return event
        return (
            event if assigned == call_id else msgspec.structs.replace(event, tool_call_id=assigned)
        )

    def _record(self, call: ToolCall) -> None:
        if self._step != (call.turn, call.step):
            self._step, self._in_step = (call.turn, call.step), {}
        self._in_step.setdefault(call.call_id, client_id(call))
        self._taken.add(client_id(call))

    def _fresh(self, call: ToolCall) -> str:
        if call.call_id not in self._taken:
            return call.call_id
        base = f"{call.call_id}#t{call.turn}s{call.step}"
        candidate, n = base, 1
        while candidate in self._taken:
            n += 1
            candidate = f"{base}~{n}"
        return candidate
