"""The real agent with one more tool, ``stuck``, whose work blocks a worker thread for ever.

A file tool blocked in ``open(2)`` on a FIFO, a hook's library call that never returns, an NFS
mount gone away: the work runs in an ``anyio.to_thread.run_sync`` worker, which no cancellation
can stop. ``stuck`` stands for all of them: it writes ``ACP_AGENT_TEST_STUCK_MARK`` (so the test
knows the thread is blocked), then waits on an event nobody sets.

``{"how": "held"}`` (the default) awaits the thread like every file tool does: the turn cannot
end, so neither can shutdown's wait for it. ``{"how": "abandoned"}`` runs it with
``abandon_on_cancel=True``: the turn ends, but the thread stays, and it is not a daemon.

Run as a script (``python tests/integration/stuck_thread_agent.py --model ...``), like
``tests/support/fake_agent.py``. The tool joins the set ``acp_agent.acp.wiring`` gives every ACP
session (``registry.coding_tools``, which ``acp/wiring.py`` looks up when a session first uses
its tools).
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import anyio

from acp_agent import cli
from acp_agent.content import TextContent
from acp_agent.tools import registry
from acp_agent.tools.base import Location, Tool, ToolContext, ToolKind, ToolOutput
from acp_agent.tools.registry import coding_tools
from acp_agent.tools.web_settings import WebFetchSettings

PATH = Path(__file__).resolve()
MARK_ENV = "ACP_AGENT_TEST_STUCK_MARK"


def _block() -> None:
    Path(os.environ[MARK_ENV]).write_text(f"{threading.get_ident()}\n", encoding="utf-8")
    threading.Event().wait()


class Stuck:
    name = "stuck"
    description = "Blocks a worker thread for ever (a test tool)."
    kind = ToolKind.READ
    parameters: dict[str, object] = {"type": "object", "properties": {}}  # noqa: RUF012

    def title(self, arguments: dict[str, object]) -> str:
        return "Stuck"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        abandon = arguments.get("how") == "abandoned"
        await anyio.to_thread.run_sync(_block, abandon_on_cancel=abandon)
        return ToolOutput([TextContent(text="unreachable")])


def command(*args: str) -> list[str]:
    """The argv that runs this agent with the current interpreter."""
    return [sys.executable, str(PATH), *args]


def _tools(*, ask_user: bool = False, web_fetch: WebFetchSettings | None = None) -> list[Tool]:
    return [*coding_tools(ask_user=ask_user, web_fetch=web_fetch), Stuck()]


if __name__ == "__main__":
    registry.coding_tools = _tools
    sys.exit(cli.main())
