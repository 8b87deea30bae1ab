"""Runs one tool call of a batch for a session: look the tool up, run it, shape the result.

Tool hooks (``pre_tool`` / ``post_tool``) wrap ``run`` here; their contexts travel back in
``ToolRunOutcome.contexts`` and the machine stages them in the outbox, so they reach the
journal only after the whole batch's results.
"""

from __future__ import annotations

from collections.abc import Sequence

import msgspec
import structlog

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import ToolCallPart
from acp_agent.model.base import ToolSpec
from acp_agent.session.admission import AdditionalContext
from acp_agent.tools.base import Tool, ToolContext, ToolError, ToolOutput

log = structlog.get_logger("acp_agent.tools")


class ToolRunOutcome(msgspec.Struct, frozen=True):
    content: list[ContentBlock]
    is_error: bool
    contexts: tuple[AdditionalContext, ...] = ()


class ToolRunner:
    def __init__(self, tools: Sequence[Tool], context: ToolContext) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.context = context

    def specs(self) -> list[ToolSpec]:
        return [ToolSpec(t.name, t.description, t.parameters) for t in self.tools.values()]

    def present(self, name: str, arguments: dict[str, object]) -> tuple[str, str, list[str]]:
        """Title, ACP tool kind and location paths of a call (for the client's UI)."""
        tool = self.tools.get(name)
        if tool is None:
            return name, "other", []
        paths = [loc.path for loc in tool.locations(arguments, self.context)]
        return tool.title(arguments), str(tool.kind), paths

    async def run(self, session_id: str, call: ToolCallPart) -> ToolRunOutcome:
        output = await self._run_tool(call)
        return ToolRunOutcome(output.content, output.is_error)

    async def _run_tool(self, call: ToolCallPart) -> ToolOutput:
        tool = self.tools.get(call.name)
        if tool is None:
            return ToolOutput([TextContent(text=f"unknown tool {call.name!r}")], is_error=True)
        try:
            return await tool.run(call.arguments, self.context)
        except ToolError as exc:
            return exc.output()
        except Exception as exc:  # a tool bug must not take the session down
            log.exception("tool_failed", tool=call.name, call_id=call.id)
            return ToolOutput([TextContent(text=f"{call.name} failed: {exc}")], is_error=True)
