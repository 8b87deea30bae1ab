"""A session's MCP servers: connected at the first model request, reused, stopped on close.

States of one server (by its index in ``mcpServers``): not tried → connected (its tools are
offered) → broken (the connection went away: reopened at the next ``prepare``) or failed (it
could not be started: logged once as ``mcp_server_failed``, its tools absent, not retried
until the client states the servers again with load, resume or fork). ``use`` replaces the
server list (a live session loaded again); ``aclose`` stops them all, after which nothing
connects again.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

import anyio

from acp_agent.logs import get_logger
from acp_agent.mcp import names
from acp_agent.mcp.config import McpServerConfig, describe
from acp_agent.mcp.tool import McpTool

if TYPE_CHECKING:
    from acp_agent.mcp.client import Connection, Spawn

log = get_logger("acp_agent.mcp")

CONNECT_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 8.0


class McpHub:
    def __init__(self, spawn: Spawn, cwd: str, session_id: str) -> None:
        self.servers: tuple[McpServerConfig, ...] = ()
        self._spawn = spawn
        self._cwd = cwd
        self._log = log.bind(session_id=session_id)
        self._connections: dict[int, Connection] = {}
        self._failed: set[int] = set()
        self._tools: list[McpTool] = []
        self._lock = anyio.Lock()
        self._closed = False

    def tools(self) -> Sequence[McpTool]:
        return self._tools

    async def use(self, servers: tuple[McpServerConfig, ...]) -> None:
        """The session's servers from now on; a different list stops the old connections."""
        if servers == self.servers:
            return
        async with self._lock:
            await self._close_connections()
            self.servers, self._failed, self._tools = servers, set(), []

    async def prepare(self) -> None:
        """Connect every server not connected yet (concurrently), then rebuild the tool list."""
        async with self._lock:
            pending = [i for i in range(len(self.servers)) if self._wanted(i)]
            if self._closed or not pending:
                return
            from acp_agent.mcp import client  # the mcp SDK: only now, not at startup

            async with anyio.create_task_group() as tg:
                for index in pending:
                    tg.start_soon(self._connect, client, index)
            self._rebuild()

    async def aclose(self) -> None:
        self._closed = True
        async with self._lock:
            await self._close_connections()
            self._tools = []

    def _wanted(self, index: int) -> bool:
        connection = self._connections.get(index)
        return index not in self._failed and (connection is None or connection.broken)

    async def _connect(self, client: ModuleType, index: int) -> None:
        config = self.servers[index]
        old = self._connections.pop(index, None)
        if old is not None:
            self._spawn(old.close)
        connection: Connection = client.Connection(config, self._cwd)
        try:
            await connection.open(self._spawn, CONNECT_TIMEOUT_S)
        except client.ConnectFailed as exc:
            self._failed.add(index)
            self._log.warning("mcp_server_failed", reason=str(exc), **describe(config))
            return
        except BaseException:  # cancelled while connecting: do not leave it half open
            self._spawn(connection.close)
            raise
        self._connections[index] = connection
        self._log.info("mcp_server_connected", **describe(config))

    def _rebuild(self) -> None:
        listed = [
            (self.servers[index].name, tool, connection)
            for index, connection in sorted(self._connections.items())
            if not connection.broken
            for tool in connection.tools
        ]
        unique = names.assign([(server, tool.name) for server, tool, _ in listed])
        self._tools = [
            McpTool(name, server, t.name, t.description, t.parameters, t.read_only, connection)
            for name, (server, t, connection) in zip(unique, listed, strict=True)
        ]

    async def _close_connections(self) -> None:
        connections, self._connections = list(self._connections.values()), {}
        with anyio.move_on_after(CLOSE_TIMEOUT_S, shield=True):
            async with anyio.create_task_group() as tg:
                for connection in connections:
                    tg.start_soon(connection.close)
        for connection in connections:
            self._log.info("mcp_server_stopped", server=connection.config.name)
