"""A tiny ACP agent built on the official Python SDK's agent side: the harness's test double.

It proves the recording harness works before the real agent exists (``command()`` spawns it).
The benchmarks' SDK baseline is ``bench/sdk_agent.py``, kept apart on purpose: a minimal echo
agent shaped like the SDK's own examples, free of these test behaviours. Every prompt is
answered with one ``agent_message_chunk`` and ``end_turn``; the prompt text picks what happens
first:

- ``read <path>``: ``fs/read_text_file`` on the client, answers with the content;
- ``permission``: a ``tool_call`` update, then ``session/request_permission``, answers with the
  outcome (``selected:<optionId>`` or ``cancelled``);
- ``env <NAME>``: answers with the agent process's ``$NAME`` (or ``<unset>``);
- ``stderr <N>``: writes N bytes to stderr first (an undrained stderr pipe would block here);
- anything else: answers ``echo: <text>``.

Run as a script (``python tests/support/fake_agent.py``), not as a module, so it needs no
``sys.path`` set-up in the child.
"""

from __future__ import annotations

import asyncio
import os
import sys
import uuid
from pathlib import Path
from typing import Any

import acp
from acp import PROTOCOL_VERSION, RequestError, update_agent_message_text
from acp.interfaces import Client
from acp.schema import (
    AcpMcpServer,
    AgentCapabilities,
    AllowedOutcome,
    AudioContentBlock,
    AuthenticateResponse,
    ClientCapabilities,
    CloseSessionResponse,
    EmbeddedResourceContentBlock,
    ForkSessionResponse,
    HttpMcpServer,
    ImageContentBlock,
    Implementation,
    InitializeResponse,
    ListSessionsResponse,
    LoadSessionResponse,
    McpServerStdio,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    ResourceContentBlock,
    ResumeSessionResponse,
    SetSessionConfigOptionResponse,
    SetSessionModeResponse,
    SseMcpServer,
    TextContentBlock,
    ToolCallStart,
    ToolCallUpdate,
)

PATH = Path(__file__).resolve()

McpServer = HttpMcpServer | SseMcpServer | AcpMcpServer | McpServerStdio
PromptBlock = (
    TextContentBlock
    | ImageContentBlock
    | AudioContentBlock
    | ResourceContentBlock
    | EmbeddedResourceContentBlock
)


def command(*args: str) -> list[str]:
    """The argv that runs this agent with the current interpreter."""
    return [sys.executable, str(PATH), *args]


class FakeAgent:
    """Implements ``acp.interfaces.Agent``; what it does not support answers -32601."""

    def __init__(self) -> None:
        self._client: Client | None = None
        self._sessions: dict[str, str] = {}  # session id -> cwd

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
            agent_info=Implementation(name="fake-agent", version="0.0.0"),
        )

    async def new_session(
        self,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> NewSessionResponse:
        session_id = f"fake-{uuid.uuid4().hex[:12]}"
        self._sessions[session_id] = cwd
        return NewSessionResponse(session_id=session_id)

    async def prompt(
        self, session_id: str, prompt: list[PromptBlock], **kwargs: Any
    ) -> PromptResponse:
        if session_id not in self._sessions:
            raise RequestError.resource_not_found(session_id)
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        reply = await self._reply(session_id, text)
        await self._conn().session_update(session_id, update_agent_message_text(reply))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        return None

    async def _reply(self, session_id: str, text: str) -> str:
        verb, _, arg = text.strip().partition(" ")
        if verb == "read":
            response = await self._conn().read_text_file(session_id=session_id, path=arg)
            return response.content
        if verb == "permission":
            return await self._ask_permission(session_id)
        if verb == "env":
            return os.environ.get(arg, "<unset>")
        if verb == "stderr":
            sys.stderr.write("x" * int(arg))
            sys.stderr.flush()
            return f"wrote {arg} bytes to stderr"
        return f"echo: {text}"

    async def _ask_permission(self, session_id: str) -> str:
        await self._conn().session_update(
            session_id,
            ToolCallStart(
                session_update="tool_call", tool_call_id="call-1", title="fake", status="pending"
            ),
        )
        options = [
            PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            PermissionOption(option_id="deny", name="Deny", kind="reject_once"),
        ]
        response = await self._conn().request_permission(
            session_id=session_id, tool_call=ToolCallUpdate(tool_call_id="call-1"), options=options
        )
        outcome = response.outcome
        if isinstance(outcome, AllowedOutcome):
            return f"selected:{outcome.option_id}"
        return outcome.outcome

    def _conn(self) -> Client:
        assert self._client is not None, "on_connect was not called"
        return self._client

    # Everything below is outside what the fake agent supports.

    async def load_session(
        self,
        cwd: str,
        session_id: str,
        mcp_servers: list[McpServer] | None = None,
        additional_directories: list[str] | None = None,
        **kwargs: Any,
    ) -> LoadSessionResponse | None:
        raise RequestError.method_not_found("session/load")

    async def list_sessions(
        self, cwd: str | None = None, cursor: str | None = None, **kwargs: Any
    ) -> ListSessionsResponse:
        raise RequestError.method_not_found("session/list")

    async def set_session_mode(
        self, session_id: str, mode_id: str, **kwargs: Any
    ) -> SetSessionModeResponse | None:
        raise RequestError.method_not_found("session/set_mode")

    async def set_config_option(
        self, config_id: str, session_id: str, value: str | bool, **kwargs: Any
    ) -> SetSessionConfigOptionResponse | None:
        raise RequestError.method_not_found("session/set_config_option")

    async def authenticate(self, method_id: str, **kwargs: Any) -> AuthenticateResponse | None:
        raise RequestError.method_not_found("authenticate")

    async def fork_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ForkSessionResponse:
        raise RequestError.method_not_found("session/fork")

    async def resume_session(
        self,
        session_id: str,
        cwd: str,
        additional_directories: list[str] | None = None,
        mcp_servers: list[McpServer] | None = None,
        **kwargs: Any,
    ) -> ResumeSessionResponse:
        raise RequestError.method_not_found("session/resume")

    async def close_session(self, session_id: str, **kwargs: Any) -> CloseSessionResponse | None:
        raise RequestError.method_not_found("session/close")

    async def ext_method(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        raise RequestError.method_not_found(f"_{method}")

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        return None


async def main() -> None:
    await acp.run_agent(FakeAgent())


if __name__ == "__main__":
    asyncio.run(main())
