"""An MCP server's tool as a session tool: permission by mode, then ``tools/call``.

Kind ``read`` when the server annotates the tool ``readOnlyHint: true`` (annotations are hints
from the server; the user trusted it by configuring it), else ``other``. Rules name it
``mcp(<server>/<tool>)`` (``tools/permissions.py`` has the table per mode).
"""

from __future__ import annotations

from typing import Protocol

from acp_agent.permissions.patterns import Target
from acp_agent.tools.base import Location, ToolContext, ToolKind, ToolOutput
from acp_agent.tools.guard import authorize, subject
from acp_agent.tools.permissions import Action


class ToolCaller(Protocol):
    async def call(self, tool: str, arguments: dict[str, object]) -> ToolOutput: ...


class McpTool:
    def __init__(
        self,
        name: str,
        server: str,
        tool: str,
        description: str,
        parameters: dict[str, object],
        read_only: bool,
        caller: ToolCaller,
    ) -> None:
        self.name = name
        self.server = server
        self.tool = tool
        self.description = description
        self.parameters = parameters
        self.read_only = read_only
        self.kind = ToolKind.READ if read_only else ToolKind.OTHER
        self._caller = caller

    @property
    def key(self) -> str:
        """What ``mcp(SERVER/TOOL)`` rules match."""
        return f"{self.server}/{self.tool}"

    @property
    def label(self) -> str:
        return f"calls to {self.tool} (MCP server {self.server})"

    def title(self, arguments: dict[str, object]) -> str:
        return f"{self.server}: {self.tool}"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        action = Action.MCP_READ if self.read_only else Action.MCP
        await authorize(ctx, action, subject(ctx, Target.MCP, self.key), self.label)
        return await self._caller.call(self.tool, arguments)
