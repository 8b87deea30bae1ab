"""``todo_write``: the plan as text for the model and as a plan view for the client."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.tools.base import ToolError
from acp_agent.tools.display import PlanItem, PlanPriority, PlanStatus, PlanView, view_of
from acp_agent.tools.todo import TodoWrite
from tests.tools.support import context


async def test_the_plan_is_rendered_and_carried_as_a_view(workspace: Path) -> None:
    todos = [
        {"content": "read the code", "status": "completed"},
        {"content": "fix the bug", "status": "in_progress", "priority": "high"},
        {"content": "run the tests", "status": "pending"},
    ]
    output = await TodoWrite().run({"todos": todos}, context(workspace))
    block = output.content[0]
    assert isinstance(block, TextContent)
    assert block.text == (
        "Plan updated (1/3 done):\n[x] read the code\n[~] fix the bug\n[ ] run the tests"
    )
    assert view_of(block) == PlanView(
        [
            PlanItem("read the code", PlanStatus.COMPLETED),
            PlanItem("fix the bug", PlanStatus.IN_PROGRESS, PlanPriority.HIGH),
            PlanItem("run the tests", PlanStatus.PENDING),
        ]
    )
    assert TodoWrite().title({"todos": todos}) == "Update plan (1/3 done)"


async def test_a_bad_status_is_an_error(workspace: Path) -> None:
    with pytest.raises(ToolError, match="bad arguments"):
        await TodoWrite().run({"todos": [{"content": "x", "status": "done"}]}, context(workspace))
