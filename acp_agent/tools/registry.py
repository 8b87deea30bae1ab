"""The built-in coding tool set every server session gets (``docs/tools.md``)."""

from __future__ import annotations

from acp_agent.tools.ask_user import AskUser
from acp_agent.tools.base import Tool
from acp_agent.tools.edit_file import EditFile
from acp_agent.tools.list_dir import ListDir
from acp_agent.tools.read_file import ReadFile
from acp_agent.tools.run_command import RunCommand
from acp_agent.tools.search import Search
from acp_agent.tools.todo import TodoWrite
from acp_agent.tools.write_file import WriteFile


def coding_tools(*, ask_user: bool = False) -> list[Tool]:
    """``ask_user``: the client renders elicitation forms (``elicitation.form``)."""
    tools: list[Tool] = [
        ReadFile(),
        ListDir(),
        Search(),
        WriteFile(),
        EditFile(),
        RunCommand(),
        TodoWrite(),
    ]
    return [*tools, AskUser()] if ask_user else tools
