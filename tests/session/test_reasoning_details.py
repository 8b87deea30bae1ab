"""Reasoning a provider wants back (OpenRouter's ``reasoning_details``) is journaled with the
assistant message and reaches every later request of the session, also after a reload.

The provider here is a stand-in that answers like OpenRouter does in the stream corpus
(``tests/model/streams/openrouter/``): a tool call with ``Finish.reasoning_details``, then text.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import msgspec

from acp_agent.api import Agent, Finished
from acp_agent.journal.events import AssistantMessage, ToolCallPart
from acp_agent.model.base import (
    AssistantTurn,
    Capabilities,
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
    ToolCallReady,
)
from acp_agent.tools.read_file import ReadFile

DETAIL = b'{"type":"reasoning.text","text":"Read it first.","signature":"sig-1","index":0}'


class ReasoningProvider:
    name = "reasoning"
    capabilities = Capabilities()

    def __init__(self) -> None:
        self.requests: list[ModelRequest] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.requests.append(request)
        if len(self.requests) == 1:
            yield ToolCallReady(ToolCallPart("c1", "read_file", {"path": "a.txt"}))
            yield Finish(reasoning_details=(msgspec.Raw(DETAIL),))
        else:
            yield TextDelta("done")
            yield Finish()


def assistant_turns(request: ModelRequest) -> list[AssistantTurn]:
    return [m for m in request.messages if isinstance(m, AssistantTurn)]


async def test_reasoning_details_are_journaled_and_sent_back(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    provider = ReasoningProvider()
    async with Agent.open(tmp_path / "state", provider, tools=lambda _: [ReadFile()]) as agent:
        session = await agent.new_session(tmp_path)
        outcome = await (await session.send("read a.txt")).outcome()
        assert isinstance(outcome, Finished)
        journaled = [e.event for e in session.entries if isinstance(e.event, AssistantMessage)]
        sid = session.id
    assert [bytes(d) for d in journaled[0].reasoning_details] == [DETAIL]
    assert journaled[1].reasoning_details == ()
    (sent,) = assistant_turns(provider.requests[1])
    assert [bytes(d) for d in sent.reasoning_details] == [DETAIL]

    again = ReasoningProvider()
    async with Agent.open(tmp_path / "state", again, tools=lambda _: [ReadFile()]) as agent:
        session = await agent.open_session(sid)
        await (await session.send("and again")).outcome()
    first, _ = assistant_turns(again.requests[0])
    assert [bytes(d) for d in first.reasoning_details] == [DETAIL]
    line = next(
        raw
        for raw in (tmp_path / "state" / "sessions" / sid / "journal.jsonl")
        .read_bytes()
        .splitlines()
        if b'"reasoningDetails"' in raw
    )
    assert DETAIL in line  # verbatim, not re-encoded
