"""Model-visible history, derived from the journal and nothing else.

``derive_messages`` is the one function that turns journal entries into the messages of a model
request. The actor calls it for every request, so what the model sees is, by construction, what
the journal holds at that moment ("model-visible = logged"). Out-of-turn ``user/message``
events are ordinary committed history here: they become user-role messages in journal order,
each keeping its own ``source``; nothing is merged into the direct prompt.
"""

from __future__ import annotations

from collections.abc import Iterable

from acp_agent.journal.events import (
    AssistantMessage,
    Entry,
    SteeringMessage,
    ToolResult,
    UserMessage,
)
from acp_agent.model.base import AssistantTurn, ModelMessage, ToolTurn, UserTurn


def derive_messages(entries: Iterable[Entry]) -> list[ModelMessage]:
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
