"""``agent {description, prompt, tools?}``: a subagent, a child session that does one job.

The tool only decodes and checks the call; the child session itself is the session layer's
(``session/subagents.py``), reached through ``ToolContext.subagents`` (``Subagents``): this
floor knows nothing of sessions. The tool is offered only where that is set, which the session
layer does not do for a session at the deepest level (a grandchild has no ``agent`` tool).
``concurrent``: the actor starts the ``agent`` calls of a batch together (``turn/batchrun.py``)
instead of one after the other.

``NamedAsker`` is how a child's permission questions reach the client: through the parent's
asker, the call's title naming the subagent, and its id made unique in the parent's session.
"""

from __future__ import annotations

import msgspec

from acp_agent.tools.args import parse, string
from acp_agent.tools.base import (
    AgentArgs,
    Location,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
)
from acp_agent.tools.permissions import CallInfo, PermissionAsker, PermissionRequest

NAME = "agent"
MAX_DEPTH = 2
"""A top-level session is depth 0; its subagents 1; theirs 2, which have no ``agent`` tool."""


class AgentTool:
    name = NAME
    concurrent = True
    description = (
        "Hand a self-contained job to a subagent: a new session with its own history that "
        "starts from `prompt` alone (it sees nothing of this conversation, so say everything "
        "it needs), works with your tools (or the subset named in `tools`) under your mode "
        "and permissions, and answers with its final message. `description` is a short label "
        "shown to the user. Several agent calls in one message run at the same time."
    )
    kind = ToolKind.OTHER
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "description": {"type": "string", "description": "a few words: the job"},
            "prompt": {"type": "string", "description": "the whole brief for the subagent"},
            "tools": {
                "type": "array",
                "items": {"type": "string"},
                "description": "the tool names it may use (default: all of yours)",
            },
        },
        "required": ["description", "prompt"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        return f"Subagent: {string(arguments, 'description') or 'a job'}"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    def offered(self, ctx: ToolContext) -> bool:
        return ctx.subagents is not None

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, AgentArgs, NAME)
        if not args.prompt.strip() or not args.description.strip():
            raise ToolError(f"{NAME}: description and prompt must not be empty")
        if ctx.subagents is None or ctx.call is None:
            raise ToolError(f"{NAME}: subagents are not available in this session")
        return await ctx.subagents.run(ctx.call, args, ctx)


class NamedAsker:
    """The parent's asker, for a child's questions: ``Subagent “description”: title``."""

    def __init__(self, parent: PermissionAsker, description: str, child_id: str) -> None:
        self.parent = parent
        self.description = description
        self.child_id = child_id

    async def ask(self, request: PermissionRequest) -> str | None:
        call = request.call
        named = CallInfo(
            f"{self.child_id}/{call.id}",
            f"Subagent “{self.description}”: {call.title}",
            call.kind,
            call.locations,
            call.raw_input,
        )
        return await self.parent.ask(msgspec.structs.replace(request, call=named))
