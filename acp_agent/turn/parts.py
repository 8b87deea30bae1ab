"""Turning a model's stream into the parts of one assistant message."""

from __future__ import annotations

from acp_agent.journal.events import AssistantPart, TextPart, ThoughtPart, ToolCallPart


async def aclose_stream(events: object) -> None:
    """Close a provider's stream at once: an async generator left suspended at a ``yield`` (a
    cancel that hit us, not it) would hold its HTTP response open until garbage collection."""
    aclose = getattr(events, "aclose", None)
    if aclose is not None:
        await aclose()


class PartsBuilder:
    """Accumulates streamed deltas into assistant message parts (adjacent deltas merged)."""

    def __init__(self) -> None:
        self._parts: list[AssistantPart | tuple[type[TextPart | ThoughtPart], list[str]]] = []

    def _delta(self, kind: type[TextPart | ThoughtPart], chunk: str) -> None:
        last = self._parts[-1] if self._parts else None
        if isinstance(last, tuple) and last[0] is kind:
            last[1].append(chunk)
        else:
            self._parts.append((kind, [chunk]))

    def text(self, chunk: str) -> None:
        self._delta(TextPart, chunk)

    def thought(self, chunk: str) -> None:
        self._delta(ThoughtPart, chunk)

    def tool_call(self, call: ToolCallPart) -> None:
        self._parts.append(call)

    def build(self) -> tuple[AssistantPart, ...]:
        return tuple(
            part[0]("".join(part[1])) if isinstance(part, tuple) else part for part in self._parts
        )
