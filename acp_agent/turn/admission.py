"""Prompt admission: the seam that runs *before* a turn opens.

An ``Admission`` decides about one direct prompt: ``Allow`` (with the prompt, possibly
replaced, and any ``AdditionalContext`` the hooks produced, FIFO) or ``Block`` (with a
reason). A blocked prompt opens no turn and writes nothing; the machine answers it
``refusal``. ``AllowAll`` is the admission of a server without prompt hooks.
"""

from __future__ import annotations

from typing import Protocol

import msgspec

from acp_agent.content import ContentBlock
from acp_agent.journal.events import Source


class AdditionalContext(msgspec.Struct, frozen=True):
    """Extra model context with provenance: exactly ``content`` and ``source``."""

    content: list[ContentBlock]
    source: Source


class Allow(msgspec.Struct, frozen=True):
    content: list[ContentBlock]
    additional_contexts: tuple[AdditionalContext, ...] = ()


class Block(msgspec.Struct, frozen=True):
    reason: str


Decision = Allow | Block


class Admission(Protocol):
    async def admit(self, session_id: str, content: list[ContentBlock]) -> Decision: ...


class AllowAll:
    async def admit(self, session_id: str, content: list[ContentBlock]) -> Decision:
        return Allow(content)
