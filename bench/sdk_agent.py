"""The SDK baseline: an echo agent on the official Python SDK (``agent-client-protocol``).

Written the way the SDK's own examples write an agent: ``acp.run_agent`` over stdio, one
``session_update`` call per notification. A prompt ``stream N`` streams N
``agent_message_chunk`` notifications of ``CHUNK`` text; any other prompt is answered with one
``echo: <text>`` chunk. Every turn ends ``end_turn``; ``session/cancel`` is accepted and ignored
(an echo has nothing to stop). No journal, no durability: it is the cost of the protocol alone.

Run as a script (``python bench/sdk_agent.py``), so the child needs no ``sys.path`` set-up.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path
from typing import Any, cast

import acp
from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text
from acp.interfaces import Agent, Client
from acp.schema import (
    AgentCapabilities,
    ClientCapabilities,
    Implementation,
    InitializeResponse,
    NewSessionResponse,
    PromptResponse,
    TextContentBlock,
)

PATH = Path(__file__).resolve()
CHUNK = "token "


def command() -> list[str]:
    return [sys.executable, str(PATH)]


class EchoAgent:
    """The parts of ``acp.interfaces.Agent`` an echo needs; the SDK answers the rest -32601."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._sessions: set[str] = set()

    def on_connect(self, conn: Client) -> None:
        self._client = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: ClientCapabilities | None = None,
        client_info: Implementation | None = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(),
            agent_info=Implementation(name="sdk-echo", version="0.0.0"),
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"sdk-{uuid.uuid4().hex[:12]}"
        self._sessions.add(session_id)
        return NewSessionResponse(session_id=session_id)

    async def prompt(self, session_id: str, prompt: list[Any], **kwargs: Any) -> PromptResponse:
        if session_id not in self._sessions:
            raise RequestError.resource_not_found(session_id)
        assert self._client is not None
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        verb, _, count = text.partition(" ")
        if verb == "stream":
            for _ in range(int(count)):
                await self._client.session_update(session_id, update_agent_message_text(CHUNK))
        else:
            await self._client.session_update(
                session_id, update_agent_message_text(f"echo: {text}")
            )
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None


async def main() -> None:
    # The SDK types its parameter as the whole ``Agent`` protocol; an echo implements the part
    # a benchmark calls (the SDK never calls the rest unless a client asks for it).
    await acp.run_agent(cast(Agent, EchoAgent()))


if __name__ == "__main__":
    asyncio.run(main())
