"""``todo_write {todos}``: the session's plan, sent to the client as ACP ``plan`` updates.

Each call replaces the whole list (as an ACP ``plan`` update does). The result text renders the
list for the model; the entries ride along as a ``plan`` view (``display.py``), so the client
gets a ``plan`` update live and again, in order, on ``session/load``.
"""

from __future__ import annotations

import msgspec

from acp_agent.tools.args import parse
from acp_agent.tools.base import Location, ToolContext, ToolKind, ToolOutput
from acp_agent.tools.display import PlanItem, PlanStatus, PlanView, shown_as

NAME = "todo_write"
_MARK = {PlanStatus.PENDING: "[ ]", PlanStatus.IN_PROGRESS: "[~]", PlanStatus.COMPLETED: "[x]"}


class TodoArgs(msgspec.Struct, frozen=True):
    todos: list[PlanItem]


class TodoWrite:
    name = NAME
    description = (
        "Keep a todo list for multi-step work; the user sees it as the plan. Send the whole list "
        "each time, with each task's status (`pending`, `in_progress`, `completed`) and optional "
        "priority (`high`, `medium`, `low`). Keep one task `in_progress` at a time."
    )
    kind = ToolKind.THINK
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {"type": "string", "description": "the task"},
                        "status": {"enum": [str(s) for s in PlanStatus]},
                        "priority": {"enum": ["high", "medium", "low"]},
                    },
                    "required": ["content", "status"],
                },
            }
        },
        "required": ["todos"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        todos = arguments.get("todos")
        if not isinstance(todos, list):
            return "Update plan"
        done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "completed")
        return f"Update plan ({done}/{len(todos)} done)"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        entries = parse(arguments, TodoArgs, NAME).todos
        return ToolOutput([shown_as(render(entries), PlanView(entries))])


def render(entries: list[PlanItem]) -> str:
    if not entries:
        return "The plan is empty."
    lines = [f"{_MARK[e.status]} {e.content}" for e in entries]
    done = sum(1 for e in entries if e.status is PlanStatus.COMPLETED)
    return f"Plan updated ({done}/{len(entries)} done):\n" + "\n".join(lines)
