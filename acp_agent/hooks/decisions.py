"""What an extension point answers: the public decision types.

A prompt listener answers ``PromptAllow`` or ``PromptBlock``; a tool listener (``pre_tool`` or
``post_tool``) answers ``ToolAllow`` or ``ToolBlock``. Contexts are ``AdditionalContext`` — the
one shared structure, exactly ``content`` and ``source`` — and keep their order (FIFO) and
each its own source. There is deliberately nothing else here: no placement, no envelope, no
model-invisible metadata (see the design note, docs/design.md, "Extension points and caller semantics").
"""

from __future__ import annotations

import msgspec

from acp_agent.content import ContentBlock
from acp_agent.turn.admission import AdditionalContext

__all__ = [
    "AdditionalContext",
    "PostToolDecision",
    "PreToolDecision",
    "PromptAllow",
    "PromptBlock",
    "PromptDecision",
    "ToolAllow",
    "ToolBlock",
]


class PromptAllow(msgspec.Struct, frozen=True):
    """Admit the prompt.

    ``content`` replaces the direct prompt; ``None`` keeps the prompt this listener was given.
    ``additional_contexts`` become independent source-tagged ``user/message``s, in this order,
    written only if the whole chain allows.
    """

    content: list[ContentBlock] | None = None
    additional_contexts: tuple[AdditionalContext, ...] = ()


class PromptBlock(msgspec.Struct, frozen=True):
    """Refuse the prompt: no turn opens and nothing (neither prompt nor contexts) is written."""

    reason: str


PromptDecision = PromptAllow | PromptBlock


class ToolAllow(msgspec.Struct, frozen=True):
    """Let the tool run (``pre_tool``) or keep its result (``post_tool``).

    ``additional_contexts`` enter the outbox after the whole tool-call batch's results.
    """

    additional_contexts: tuple[AdditionalContext, ...] = ()


class ToolBlock(msgspec.Struct, frozen=True):
    """``pre_tool``: the tool does not run; its result is an error carrying ``reason``.
    ``post_tool``: the result is marked as an error carrying ``reason``."""

    reason: str


PreToolDecision = ToolAllow | ToolBlock
PostToolDecision = ToolAllow | ToolBlock
