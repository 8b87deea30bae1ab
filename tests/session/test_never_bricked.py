"""One oversized prompt never bricks a session (docs/contract.md §8 "Never bricked").

The provider stands in for a server with a small window: it refuses, as ``ContextOverflow``
(what the OpenAI-compatible provider raises for ``context_length_exceeded`` and its kin), any
request whose estimate exceeds its window, and says so in ``context_window`` as a real provider
does. The overflowing prompt fails with a message saying the window was exceeded; the next
prompt compacts first — with a summary request that itself fits — and is answered, in the same
process and after the session is opened again in a new one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

from acp_agent.api import Agent, Failed, Finished
from acp_agent.journal.events import Compaction
from acp_agent.model.base import (
    Capabilities,
    ContextOverflow,
    Finish,
    ModelRequest,
    StreamEvent,
    TextDelta,
)
from acp_agent.turn.fit import estimate

WINDOW = 2_000
HUGE = "lorem ipsum " * 4_000  # about 12k tokens by the session's estimate


class SmallWindow:
    name = "small-window"
    capabilities = Capabilities(context_window=WINDOW)

    def __init__(self) -> None:
        self.sizes: list[tuple[int, int]] = []

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        size = estimate(request.messages) + len(request.system) // 4
        self.sizes.append((request.turn, size))
        if size > WINDOW:
            raise ContextOverflow(f"maximum context length is {WINDOW} tokens, asked {size}")
        yield TextDelta("summary of what came before" if request.turn == 0 else "answered")
        yield Finish()


async def test_an_overflow_fails_clearly_and_the_next_prompt_is_answered(tmp_path: Path) -> None:
    provider = SmallWindow()
    async with Agent.open(tmp_path / "state", provider) as agent:
        session = await agent.new_session(tmp_path)
        failed = await (await session.send(HUGE)).outcome()
        assert isinstance(failed, Failed) and "context window" in failed.message
        answered = await (await session.send("hi")).outcome()
        assert isinstance(answered, Finished)
        assert any(isinstance(e.event, Compaction) for e in session.entries)
    turns = [turn for turn, _ in provider.sizes]
    assert turns == [1, 0, 2], "the overflow, the summary request, the answered prompt"
    assert all(size <= WINDOW for _, size in provider.sizes[1:])


async def test_after_a_restart_the_next_prompt_compacts_first(tmp_path: Path) -> None:
    async with Agent.open(tmp_path / "state", SmallWindow()) as agent:
        session = await agent.new_session(tmp_path)
        assert isinstance(await (await session.send(HUGE)).outcome(), Failed)
        sid = session.id
    provider = SmallWindow()
    async with Agent.open(tmp_path / "state", provider) as agent:
        session = await agent.open_session(sid)
        assert isinstance(await (await session.send("hi")).outcome(), Finished)
        again = await (await session.send("and again")).outcome()
        assert isinstance(again, Finished)
    assert [turn for turn, _ in provider.sizes] == [0, 2, 3]
    assert all(size <= WINDOW for _, size in provider.sizes)
