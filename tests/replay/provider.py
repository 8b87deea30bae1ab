"""A small in-test ``ModelProvider`` for the recorder: deterministic, but not the script model.

It streams the way a real provider does — a thought in several deltas, text in several deltas,
tool calls once the text is done — and answers from the request: the first request of a turn
reads the file the prompt names, a request that follows tool results summarizes them, and a
prompt containing "hang" streams a little, then waits until cancelled. The recorder reaches it
with ``--model python:tests.replay.provider:make`` (the repository root on ``PYTHONPATH``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import anyio

from acp_agent.content import TextContent
from acp_agent.journal.events import ToolCallPart
from acp_agent.model.base import (
    Capabilities,
    Finish,
    ModelProvider,
    ModelRequest,
    StopKind,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
    ToolTurn,
    UserTurn,
)


class ChattyProvider:
    name = "chatty"
    capabilities = Capabilities()

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        last = request.messages[-1]
        if isinstance(last, ToolTurn):
            async for event in self._summarize(request):
                yield event
            return
        prompt = _text(last) if isinstance(last, UserTurn) else ""
        yield ThoughtDelta("The user ")
        yield ThoughtDelta(f"wrote {len(prompt)} characters.")
        if "hang" in prompt:
            yield TextDelta("Working")
            await anyio.sleep_forever()
        for word in ("Sure", ", ", "let me look."):
            yield TextDelta(word)
        if match := re.search(r"[\w.-]+\.txt", prompt):
            yield ToolCallReady(
                ToolCallPart(f"call-{request.turn}", "read_file", {"path": match[0]})
            )
            yield Finish()
        else:
            yield Finish(StopKind.MAX_TOKENS if "long" in prompt else StopKind.END_TURN)

    async def _summarize(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        results = [m for m in request.messages if isinstance(m, ToolTurn)]
        yield TextDelta(f"I read {len(results)} file(s): ")
        yield TextDelta(_text(results[-1]).strip())
        yield Finish()


def _text(message: UserTurn | ToolTurn) -> str:
    return "".join(block.text for block in message.content if isinstance(block, TextContent))


def make() -> ModelProvider:
    return ChattyProvider()
