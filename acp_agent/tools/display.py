"""What a tool result shows the user besides its text: a diff, a client terminal, a plan.

A tool result is journaled as content blocks (``tool/result.content``), which is also what the
model sees. The richer views ACP offers for a tool call (``diff`` and ``terminal`` content, and
``plan`` updates) ride along *inside* the journaled result: a text block whose
``_meta.acp_agent.display`` holds one view. The ACP projection (``acp/projection.py``) turns such a
block into the matching wire content, live and on ``session/load`` alike, so the journal format
is unchanged and replay shows what the live session showed:

- ``diff``: the text block plus a ``diff`` item (path, old and new text);
- ``terminal``: live, the ``terminal`` item the client already streamed (the text is the same
  output, for the model); on replay the terminal is long released, so the text is shown instead;
- ``plan``: the text block, then a ``plan`` session update with the entries;
- ``child``: the text block, the update carrying ``_meta.acp_agent.childSessionId`` (a subagent).

Models see the text (providers read ``text``; ``_meta`` is opaque to them).
"""

from __future__ import annotations

from enum import StrEnum

import msgspec

from acp_agent.content import ContentBlock, TextContent

DISPLAY_KEY = "display"


class DiffView(msgspec.Struct, frozen=True, tag="diff", tag_field="type", rename="camel"):
    path: str
    new_text: str
    old_text: str | None = None
    """``None``: a new file."""


class TerminalView(msgspec.Struct, frozen=True, tag="terminal", tag_field="type", rename="camel"):
    terminal_id: str


class PlanStatus(StrEnum):
    PENDING = "pending"
    IN_PROGRESS = "in_progress"
    COMPLETED = "completed"


class PlanPriority(StrEnum):
    HIGH = "high"
    MEDIUM = "medium"
    LOW = "low"


class PlanItem(msgspec.Struct, frozen=True):
    content: str
    status: PlanStatus = PlanStatus.PENDING
    priority: PlanPriority = PlanPriority.MEDIUM


class PlanView(msgspec.Struct, frozen=True, tag="plan", tag_field="type"):
    entries: list[PlanItem]


class ChildView(msgspec.Struct, frozen=True, tag="child", tag_field="type", rename="camel"):
    """The child session a subagent call runs (``subagent.py``): the call's
    ``_meta.acp_agent.childSessionId``, live and on replay."""

    session_id: str
    description: str | None = None


View = DiffView | TerminalView | PlanView | ChildView


def shown_as(text: str, view: View) -> TextContent:
    """A text block that also carries ``view`` for the client."""
    meta: dict[str, object] = {"acp_agent": {DISPLAY_KEY: msgspec.to_builtins(view)}}
    return TextContent(text=text, meta=meta)


def view_of(block: ContentBlock) -> View | None:
    """The view a block carries, if any (anything unreadable is no view)."""
    if not isinstance(block, TextContent) or not block.meta:
        return None
    ours = block.meta.get("acp_agent")
    raw = ours.get(DISPLAY_KEY) if isinstance(ours, dict) else None
    if raw is None:
        return None
    try:
        view: View = msgspec.convert(raw, View)
    except msgspec.ValidationError:
        return None
    return view


def without_view(block: TextContent) -> TextContent:
    """The block as the client should see it: the view travels separately."""
    meta = dict(block.meta or {})
    ours = meta.get("acp_agent")
    if isinstance(ours, dict):
        rest = {k: v for k, v in ours.items() if k != DISPLAY_KEY}
        if rest:
            meta["acp_agent"] = rest
        else:
            del meta["acp_agent"]
    return TextContent(text=block.text, annotations=block.annotations, meta=meta or None)
