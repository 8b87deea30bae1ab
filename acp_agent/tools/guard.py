"""``authorize``: the one call a tool makes before it writes a file or runs a command."""

from __future__ import annotations

import shlex

from acp_agent.tools.base import ToolContext, ToolError
from acp_agent.tools.display import View
from acp_agent.tools.permissions import Action, CallInfo

EDIT_KEY = "edit"
EDIT_LABEL = "file edits"
_SHELL_OPERATORS = frozenset(";&|<>()$`\\\n*?[]{}~!#")


async def authorize(
    ctx: ToolContext, action: Action, key: str, label: str, preview: list[View] | None = None
) -> None:
    """Return when the session's permissions allow the call; else raise ``ToolError`` saying why
    (the call then has not touched anything)."""
    call = ctx.call or CallInfo(id="", title=label, kind=str(action), locations=[], raw_input={})
    decision = await ctx.permissions.decide(action, key, label, call, preview or [])
    if decision.cancelled:
        raise ToolError(f"cancelled: {decision.reason}; nothing was changed")
    if not decision.allowed:
        raise ToolError(f"permission denied: {decision.reason}; nothing was changed")


def command_key(command: str) -> tuple[str, str]:
    """The allow-always key and label of a command line (see ``permissions.py``)."""
    if not any(ch in _SHELL_OPERATORS for ch in command):
        try:
            words = shlex.split(command)
        except ValueError:
            words = []
        if words:
            return f"execute:{words[0]}", f"`{words[0]}` commands"
    return f"execute:{command}", f"the command `{command}`"
