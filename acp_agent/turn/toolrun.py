"""Runs one tool call of a batch for a session: look the tool up, run it, shape the result.

Tool hooks (``pre_tool`` / ``post_tool``) wrap ``run`` here; their contexts travel back in
``ToolRunOutcome.contexts`` and the machine stages them in the outbox, so they reach the
journal only after the whole batch's results.

Besides the built-in tools, a session may have MCP servers (``mcp/hub.py``): ``prepare``, called
before each model request, connects them the first time and returns every tool's spec; their
tools are looked up after the built-in ones. The checkpoints a call's tool made
(``checkpoints/``) are taken after it and travel in ``ToolRunOutcome.checkpoints`` to its
``tool/result``; a cancelled call's are taken by the actor (``take_checkpoints``). A name the runner does not know (an MCP tool of a
server not connected in this process, met while replaying) is presented from its name.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Protocol, cast

import msgspec

from acp_agent.checkpoints.recorder import Recorder
from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import Checkpoint, ToolCallPart
from acp_agent.logs import get_logger
from acp_agent.mcp import names as mcp_names
from acp_agent.mcp.hub import McpHub
from acp_agent.model.base import ToolSpec, invalid_arguments
from acp_agent.tools.base import Conditional, Tool, ToolContext, ToolError, ToolOutput
from acp_agent.tools.permissions import CallInfo, Permissions
from acp_agent.turn.admission import AdditionalContext

log = get_logger("acp_agent.tools")


class ToolRunOutcome(msgspec.Struct, frozen=True):
    content: list[ContentBlock]
    is_error: bool
    contexts: tuple[AdditionalContext, ...] = ()
    checkpoints: tuple[Checkpoint, ...] = ()


class ToolVerdict(msgspec.Struct, frozen=True):
    """A tool hook chain's final answer: allow (``reason`` None) with contexts, or block."""

    reason: str | None = None
    additional_contexts: tuple[AdditionalContext, ...] = ()


ALLOW = ToolVerdict()


class ToolHooks(Protocol):
    async def before(self, session_id: str, cwd: str, call: ToolCallPart) -> ToolVerdict: ...

    async def after(
        self, session_id: str, cwd: str, call: ToolCallPart, output: ToolOutput
    ) -> ToolVerdict: ...


class ToolRunner:
    """``tools``: the built-in tools, or what makes them at their first use (a server session:
    the tool modules are imported when a prompt needs them, not when the session opens)."""

    def __init__(
        self,
        tools: Sequence[Tool] | Callable[[], Sequence[Tool]],
        context: ToolContext,
        hooks: ToolHooks | None = None,
        mcp: McpHub | None = None,
    ) -> None:
        self._make = tools if callable(tools) else None
        self._tools = None if callable(tools) else _by_name(tools)
        self.context = context
        self.hooks = hooks
        self.mcp = mcp

    @property
    def tools(self) -> dict[str, Tool]:
        if self._tools is None:
            assert self._make is not None
            self._tools = _by_name(self._make())
        return self._tools

    @tools.setter
    def tools(self, tools: dict[str, Tool]) -> None:
        self._tools = tools

    @property
    def permissions(self) -> Permissions:
        return self.context.permissions

    def set_roots(self, roots: Sequence[Path]) -> None:
        """The session's extra roots (``additionalDirectories``), besides its cwd."""
        self.context = replace(self.context, roots=tuple(roots))

    def record_checkpoints(self, recorder: Recorder) -> None:
        """Record what the tools change from now on (``checkpoints/``)."""
        self.context = replace(self.context, checkpoints=recorder)

    def take_checkpoints(self) -> tuple[Checkpoint, ...]:
        """What the last call changed (also when it was cancelled half-way), once."""
        recorder = self.context.checkpoints
        return recorder.take() if recorder is not None else ()

    def specs(self, compact: bool = False) -> list[ToolSpec]:
        """The tools offered now (a ``Conditional`` tool only while it says so); ``compact``:
        only the core tools, each with the first sentence of its description and no
        descriptions of its parameters (a small window: ``[agent] prompt``)."""
        offered = [t for t in self._all() if _offered(t, self.context)]
        if not compact:
            return [ToolSpec(t.name, t.description, t.parameters) for t in offered]
        core = [t for t in offered if t.name in CORE_TOOLS]
        return [ToolSpec(t.name, _short(t.description), _bare(t.parameters)) for t in core]

    async def prepare(self, compact: bool = False) -> list[ToolSpec]:
        """The specs for a model request, once the session's MCP servers are connected."""
        if self.mcp is not None and not compact:
            await self.mcp.prepare()
        return self.specs(compact)

    async def aclose(self) -> None:
        """Stop what the tools keep running between calls (background tasks, MCP servers)."""
        if self.context.tasks is not None:
            await self.context.tasks.close()
        if self.mcp is not None:
            await self.mcp.aclose()

    def _all(self) -> list[Tool]:
        return [*self.tools.values(), *(self.mcp.tools() if self.mcp is not None else ())]

    def _lookup(self, name: str) -> Tool | None:
        tool = self.tools.get(name)
        if tool is None and self.mcp is not None:
            tool = next((t for t in self.mcp.tools() if t.name == name), None)
        return tool

    def concurrent(self, name: str) -> bool:
        """Whether calls of ``name`` run together with the batch's others (``agent``)."""
        return getattr(self.tools.get(name), "concurrent", False) is True

    def present(self, name: str, arguments: dict[str, object]) -> tuple[str, str, list[str]]:
        """Title, ACP tool kind and location paths of a call (for the client's UI)."""
        tool = self._lookup(name)
        if tool is None:
            server_tool = mcp_names.split(name)
            return (f"{server_tool[0]}: {server_tool[1]}" if server_tool else name), "other", []
        paths = [loc.path for loc in tool.locations(arguments, self.context)]
        return tool.title(arguments), str(tool.kind), paths

    async def run(self, session_id: str, call: ToolCallPart) -> ToolRunOutcome:
        """pre_tool hooks, the tool, post_tool hooks. A block anywhere is an error result, and
        so is a call whose arguments the model wrote as no JSON object (nothing runs)."""
        malformed = invalid_arguments(call)
        if malformed is not None:
            return ToolRunOutcome([TextContent(text=malformed)], is_error=True)
        cwd = str(self.context.cwd)
        before = await self.hooks.before(session_id, cwd, call) if self.hooks else ALLOW
        if before.reason is not None:
            blocked = f"blocked by a pre_tool hook: {before.reason}"
            return ToolRunOutcome([TextContent(text=blocked)], is_error=True)
        output = await self._run_tool(call)
        changed = self.take_checkpoints()
        after = await self.hooks.after(session_id, cwd, call, output) if self.hooks else ALLOW
        if after.reason is not None:
            note = TextContent(text=f"blocked by a post_tool hook: {after.reason}")
            blocked_after = [*output.content, note]
            return ToolRunOutcome(blocked_after, True, before.additional_contexts, changed)
        contexts = (*before.additional_contexts, *after.additional_contexts)
        return ToolRunOutcome(output.content, output.is_error, contexts, changed)

    async def _run_tool(self, call: ToolCallPart) -> ToolOutput:
        tool = self._lookup(call.name)
        if tool is None:
            return ToolOutput([TextContent(text=f"unknown tool {call.name!r}")], is_error=True)
        title, kind, paths = self.present(call.name, call.arguments)
        info = CallInfo(call.id, title, kind, paths, call.arguments)
        try:
            return await tool.run(call.arguments, replace(self.context, call=info))
        except ToolError as exc:
            return exc.output()
        except Exception as exc:  # a tool bug must not take the session down
            log.exception("tool_failed", tool=call.name, call_id=call.id)
            return ToolOutput([TextContent(text=f"{call.name} failed: {exc}")], is_error=True)


CORE_TOOLS = frozenset({"read_file", "edit_file", "write_file", "run_command"})
"""What a small window offers (``specs(compact=True)``): reading, changing, running. ``search``
and ``list_dir`` are left out (their schemas are 80-180 tokens each, and ``run_command`` can
``ls`` and ``grep``), so the first request of a 4,096-token window stays under 15 % of it."""


def _short(description: str) -> str:
    """The first sentence of a tool's description."""
    head, dot, _ = description.partition(". ")
    return head + "." if dot else description


_KEPT = frozenset({"type", "items", "enum"})


def _bare(schema: dict[str, object]) -> dict[str, object]:
    """A parameters schema of its required properties only, each saying its type only (no
    descriptions, no bounds); the tool still takes the others if the model sends them."""
    properties, required = schema.get("properties"), schema.get("required")
    if not isinstance(properties, dict):
        return schema
    needed = set(required) if isinstance(required, list) else set(properties)
    bare = {
        name: {k: v for k, v in spec.items() if k in _KEPT} if isinstance(spec, dict) else spec
        for name, spec in properties.items()
        if name in needed
    }
    return {**schema, "properties": bare}


def _offered(tool: Tool, context: ToolContext) -> bool:
    return not _conditional(type(tool)) or cast(Conditional, tool).offered(context)


@functools.cache
def _conditional(kind: type) -> bool:
    """``isinstance(tool, Conditional)``, decided once per tool class: the runtime check of a
    protocol walks its members at every call (about 10 µs in Python 3.11), and it is asked of
    every tool for every model request."""
    return issubclass(kind, Conditional)


def _by_name(tools: Sequence[Tool]) -> dict[str, Tool]:
    return {tool.name: tool for tool in tools}
