"""What each ACP session is built with: the coding tools over the client's services (their
commands inside the process's sandbox), the configured hooks, and an observer projecting onto
the wire (``session/wiring.py``'s ``Wiring``)."""

from __future__ import annotations

from anyio.abc import TaskGroup

from acp_agent.acp.observer import AcpClient, AcpObserver
from acp_agent.hooks.bridge import HookSet, SessionToolHooks
from acp_agent.journal.events import SessionHeader
from acp_agent.mcp.hub import McpHub
from acp_agent.model.registry import ModelCatalog
from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW
from acp_agent.sandbox.guard import Sandbox
from acp_agent.session.system_prompt import PromptConfig
from acp_agent.session.wiring import Wiring
from acp_agent.tools.base import Tool
from acp_agent.tools.web_settings import WebFetchSettings
from acp_agent.turn.admission import Admission
from acp_agent.turn.toolrun import ToolRunner


def acp_wiring(
    client: AcpClient,
    models: ModelCatalog,
    hooks: HookSet,
    tg: TaskGroup,
    context_window: int = DEFAULT_CONTEXT_WINDOW,
    prompt: PromptConfig | None = None,
    web_fetch: WebFetchSettings | None = None,
    *,
    sandbox: Sandbox,
) -> Wiring[AcpObserver]:
    """``tg`` runs the sessions' MCP connections; ``web_fetch``: the config file's
    ``[web_fetch]`` table."""

    def tools(header: SessionHeader) -> ToolRunner:
        context = client.tool_context(header, sandbox)
        mcp = McpHub(tg.start_soon, header.cwd, header.id)
        ask_user = context.elicitation is not None

        def built_in() -> list[Tool]:  # at the session's first prompt (``ToolRunner``)
            from acp_agent.tools.registry import coding_tools

            return coding_tools(ask_user=ask_user, web_fetch=web_fetch)

        return ToolRunner(built_in, context, SessionToolHooks(hooks), mcp)

    def admission(header: SessionHeader) -> Admission:
        return hooks.admission_for(header.cwd)

    instructions = prompt or PromptConfig()
    return Wiring(models, tools, admission, client.observer, context_window, prompt=instructions)
