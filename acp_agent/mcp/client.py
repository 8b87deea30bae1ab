"""One live connection to one MCP server, owned by one task. Imports the ``mcp`` package:
only ``hub.py`` imports this module, at a session's first ``prepare`` (see ``__init__``).

The SDK's transports (``stdio_client``, ``streamable_http_client``) hold task groups, so one
task must enter and leave them: ``_own`` runs in the server's task group from ``open`` until
``close``; calls from the session's tool workers go through the shared ``Client``. A call that
is cancelled (``session/cancel``) stops waiting at once and the SDK tells the server
(``notifications/cancelled``); the connection stays usable. A call that finds the connection
gone marks it ``broken`` and the hub reopens it at the next turn.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import msgspec
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, Implementation, Tool
from mcp_types import CONNECTION_CLOSED

from acp_agent import __version__
from acp_agent.content import ContentBlock, TextContent
from acp_agent.logs import get_logger
from acp_agent.mcp.config import HttpServer, McpServerConfig, StdioServer
from acp_agent.tools.base import ToolOutput

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], object]
"""Runs a task for as long as the server serves (``TaskGroup.start_soon``)."""

log = get_logger("acp_agent.mcp")

CLIENT_INFO = Implementation(name="acp-agent", version=__version__)
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)
_BLOCK = msgspec.json.Decoder(ContentBlock)


@dataclass(frozen=True)
class ListedTool:
    name: str
    description: str
    parameters: dict[str, object]
    read_only: bool


class ConnectFailed(Exception):
    """The server could not be started, reached or initialized; the message says why."""


class Connection:
    def __init__(self, config: McpServerConfig, cwd: str) -> None:
        self.config = config
        self.cwd = cwd
        self.broken = False
        self._client: Client | None = None
        self._tools: list[ListedTool] = []
        self._error: str | None = None
        self._scope = anyio.CancelScope()
        self._settled = anyio.Event()
        self._stop = anyio.Event()
        self._done = anyio.Event()
        self._started = False

    async def open(self, spawn: Spawn, wait_s: float) -> list[ListedTool]:
        """Start the owner task and wait until the tools are listed. Raises ``ConnectFailed``."""
        self._started = True
        spawn(self._own)
        with anyio.move_on_after(wait_s):
            await self._settled.wait()
        if not self._settled.is_set():
            self._error = f"no answer within {wait_s:g} s"
            self._scope.cancel()
        if self._error is not None:
            raise ConnectFailed(self._error)
        return self._tools

    @property
    def tools(self) -> list[ListedTool]:
        return self._tools

    async def close(self) -> None:
        """Stop the server (stdio: stdin closed, then terminated; http: session deleted)."""
        self._stop.set()
        if not self._started:
            return
        if not self._settled.is_set():
            self._scope.cancel()
        await self._done.wait()

    async def call(self, tool: str, arguments: dict[str, object]) -> ToolOutput:
        client = self._client
        if client is None or self.broken:
            return _error(f"the MCP server {self.config.name!r} is not connected")
        try:
            result = await client.call_tool(tool, arguments)
        except MCPError as exc:
            self.broken = exc.code == CONNECTION_CLOSED
            return _error(f"MCP error {exc.code}: {exc.message}")
        except Exception as exc:  # the transport failed: reopen at the next turn
            self.broken = True
            log.warning("mcp_call_failed", server=self.config.name, tool=tool, error=_reason(exc))
            return _error(f"the MCP server {self.config.name!r} failed: {_reason(exc)}")
        return to_output(result)

    async def _own(self) -> None:
        try:
            with self._scope:
                async with AsyncExitStack() as stack:
                    client = await stack.enter_async_context(await self._connect(stack))
                    self._tools = await _list_tools(client)
                    self._client = client
                    self._settled.set()
                    await self._stop.wait()
        except Exception as exc:
            self._error = self._error or _reason(exc)
        finally:
            self._client = None
            self.broken = True
            self._settled.set()
            self._done.set()

    async def _connect(self, stack: AsyncExitStack) -> Client:
        match self.config:
            case StdioServer(command=command, args=args, env=env):
                variables = {pair.name: pair.value for pair in env}
                params = StdioServerParameters(
                    command=command, args=args, env=variables, cwd=self.cwd
                )
                return Client(params, client_info=CLIENT_INFO, cache=None)
            case HttpServer(url=url, headers=headers):
                fields = {pair.name: pair.value for pair in headers}
                http = httpx2.AsyncClient(headers=fields, timeout=HTTP_TIMEOUT)
                await stack.enter_async_context(http)
                transport = streamable_http_client(url, http_client=http)
                return Client(transport, client_info=CLIENT_INFO, cache=None)


async def _list_tools(client: Client) -> list[ListedTool]:
    tools: list[ListedTool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools += [_listed(tool) for tool in page.tools]
        cursor = page.next_cursor
        if cursor is None:
            return tools


def _listed(tool: Tool) -> ListedTool:
    hints = tool.annotations
    return ListedTool(
        name=tool.name,
        description=tool.description or tool.title or tool.name,
        parameters=dict(tool.input_schema),
        read_only=bool(hints is not None and hints.read_only_hint),
    )


def to_output(result: CallToolResult) -> ToolOutput:
    """MCP content is ACP content (ACP kept MCP's shapes): blocks pass through; anything this
    agent cannot carry becomes a text note. Structured content alone is shown as JSON."""
    blocks = [
        _block(item.model_dump(mode="json", by_alias=True, exclude_none=True))
        for item in result.content
    ]
    if not blocks and result.structured_content is not None:
        blocks = [TextContent(text=msgspec.json.encode(result.structured_content).decode())]
    return ToolOutput(blocks or [TextContent(text="(no output)")], is_error=bool(result.is_error))


def _block(item: dict[str, object]) -> ContentBlock:
    try:
        return _BLOCK.decode(msgspec.json.encode(item))
    except msgspec.ValidationError:
        return TextContent(text=f"[{item.get('type', 'unknown')} content not shown]")


def _error(text: str) -> ToolOutput:
    return ToolOutput([TextContent(text=text)], is_error=True)


def _reason(exc: BaseException) -> str:
    """The innermost causes of ``exc`` (task groups wrap them), as one line."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(inner) for inner in exc.exceptions)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
