"""The built-in coding tool set every server session gets (``docs/tools.md``)."""

from __future__ import annotations

from acp_agent.tools.base import Tool
from acp_agent.tools.edit_file import EditFile
from acp_agent.tools.glob_files import Glob
from acp_agent.tools.list_dir import ListDir
from acp_agent.tools.multi_edit import MultiEdit
from acp_agent.tools.plan_mode import ExitPlanMode
from acp_agent.tools.read_file import ReadFile
from acp_agent.tools.run_command import RunCommand
from acp_agent.tools.search import Search
from acp_agent.tools.subagent import AgentTool
from acp_agent.tools.task_tools import TaskOutput, TaskStop
from acp_agent.tools.todo import TodoWrite
from acp_agent.tools.web_fetch import WebFetch
from acp_agent.tools.web_settings import WebFetchSettings
from acp_agent.tools.write_file import WriteFile


def coding_tools(
    *, ask_user: bool = False, web_fetch: WebFetchSettings | None = None
) -> list[Tool]:
    """``ask_user``: the client renders elicitation forms (``elicitation.form``);
    ``web_fetch``: the config file's ``[web_fetch]`` table (``web_settings.py``)."""
    tools: list[Tool] = [
        ReadFile(),
        ListDir(),
        Search(),
        Glob(),
        WriteFile(),
        EditFile(),
        MultiEdit(),
        RunCommand(),
        TaskOutput(),
        TaskStop(),
        TodoWrite(),
        WebFetch(web_fetch),
        ExitPlanMode(),
        AgentTool(),
    ]
    if not ask_user:
        return tools
    from acp_agent.tools.ask_user import AskUser  # for a client that renders forms only

    return [*tools, AskUser()]
