"""The model's side of background tasks (contract §12): ``run_command {background: true}``
answers through ``in_background``; ``task_output {task, since?}`` reads a task's output and
state; ``task_stop {task}`` ends its process group. The tasks themselves are the session's
``TaskTable`` (``background.py``), reached through ``ToolContext.tasks``.

``task_output`` is bounded like ``run_command``: at most ``OUTPUT_LIMIT`` bytes a call. Without
``since`` it shows the output's last ``OUTPUT_LIMIT`` bytes (where a build's error is); with
``since`` the bytes from that offset on, and the result names the offset to ask for next.
Neither tool asks permission: starting the command did.
"""

from __future__ import annotations

from pathlib import Path

import msgspec

from acp_agent.content import TextContent
from acp_agent.sandbox.guard import Confined
from acp_agent.tools.args import parse, string
from acp_agent.tools.background import TaskLimit, TaskTable, UnknownTask
from acp_agent.tools.base import Location, ToolContext, ToolError, ToolKind, ToolOutput

OUTPUT_LIMIT = 64 << 10
"""The same bound as ``run_command``'s output."""
_TASK_PROPERTY: dict[str, object] = {"type": "string", "description": "the task id (`t1`, ...)"}


def _table(ctx: ToolContext, tool: str) -> TaskTable:
    if ctx.tasks is None:
        raise ToolError(f"{tool}: background tasks are not available in this session")
    return ctx.tasks


async def in_background(
    ctx: ToolContext, command: str, cwd: Path, confined: Confined
) -> ToolOutput:
    """Start ``command`` as a task inside ``confined``'s sandbox (the session's, as for every
    command); the result's first line is ``task: <id>``, its second the sandbox policy. A 9th
    task while 8 run is refused (an error result)."""
    table = _table(ctx, "run_command")
    try:
        record = await table.start(command, cwd, confined)
    except TaskLimit as exc:
        raise ToolError(f"run_command: refused: {exc}") from exc
    except OSError as exc:
        raise ToolError(f"run_command: cannot start the background task: {exc}") from exc
    text = (
        f"task: {record.id}\n"
        f"{confined.note}\n"
        f"started in the background: $ {command}\n"
        f"Read its output with task_output {{task: {record.id!r}}}, end it with task_stop; "
        "when it ends you will be told in a message."
    )
    return ToolOutput([TextContent(text=text)])


class TaskOutputArgs(msgspec.Struct, frozen=True):
    task: str
    since: int | None = None


class TaskStopArgs(msgspec.Struct, frozen=True):
    task: str


class TaskOutput:
    name = "task_output"
    description = (
        "Read the output of a background task (started by run_command with background: true) "
        "and its state (`running` or `exited <status>`). Without `since`: the last "
        f"{OUTPUT_LIMIT // 1024} KiB; with `since`: the output from that byte offset on (at most "
        f"{OUTPUT_LIMIT // 1024} KiB; the result says where to continue)."
    )
    kind = ToolKind.READ
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "task": _TASK_PROPERTY,
            "since": {"type": "integer", "minimum": 0, "description": "a byte offset"},
        },
        "required": ["task"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        return f"Output of task {string(arguments, 'task') or '?'}"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, TaskOutputArgs, self.name)
        table = _table(ctx, self.name)
        try:
            record = table.get(args.task)
            text, start, end = table.read(args.task, args.since, OUTPUT_LIMIT)
        except UnknownTask as exc:
            raise ToolError(f"{self.name}: {exc}") from exc
        lines = [f"task: {record.id} {record.state()}", f"$ {record.command}"]
        lines.append(f"[output bytes {start}..{end}; next since: {end}]")
        if record.dropped:
            lines.append(f"[{record.dropped} bytes after the first 8 MiB were not kept]")
        if text:
            lines.append(text.rstrip("\n"))
        return ToolOutput([TextContent(text="\n".join(lines))])


class TaskStop:
    name = "task_stop"
    description = "End a background task: its whole process group is killed."
    kind = ToolKind.EXECUTE
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {"task": _TASK_PROPERTY},
        "required": ["task"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        return f"Stop task {string(arguments, 'task') or '?'}"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, TaskStopArgs, self.name)
        table = _table(ctx, self.name)
        try:
            was_running = table.get(args.task).running
            record = await table.stop(args.task)
        except UnknownTask as exc:
            raise ToolError(f"{self.name}: {exc}") from exc
        verb = "stopped" if was_running else "had already ended"
        return ToolOutput([TextContent(text=f"task: {record.id} {verb}: {record.state()}")])
