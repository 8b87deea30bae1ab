"""``write_file {path, content}``: create a file or replace its whole content.

The new content is shown as a ``diff`` against the current one (no old text for a new file), in
the permission request and in the result. Writes go through ``fs/write_text_file`` when the client
advertised it, else to the disk (``files.py``); the path must stay inside the session roots.
"""

from __future__ import annotations

import msgspec

from acp_agent.content import TextContent
from acp_agent.tools.args import located, parse, string
from acp_agent.tools.base import Location, ToolContext, ToolKind, ToolOutput, confine
from acp_agent.tools.display import DiffView, View, shown_as
from acp_agent.tools.files import diffable, line_count, read_current, write_text
from acp_agent.tools.guard import authorize_edit

NAME = "write_file"


class WriteFileArgs(msgspec.Struct, frozen=True):
    path: str
    content: str


class WriteFile:
    name = NAME
    description = (
        "Create a text file, or replace the whole content of an existing one. `path` is relative "
        "to the session working directory. Prefer `edit_file` for changing part of a file."
    )
    kind = ToolKind.EDIT
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path"},
            "content": {"type": "string", "description": "the complete new file content"},
        },
        "required": ["path", "content"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        path = string(arguments, "path")
        return f"Write {path}" if path else "Write file"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return located(arguments, ctx)

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, WriteFileArgs, NAME)
        path = confine(args.path, ctx)
        old = await read_current(ctx, path, NAME)
        views: list[View] = []
        if diffable(old, args.content):
            views.append(DiffView(str(path), args.content, old))
        await authorize_edit(ctx, path, views)
        await write_text(ctx, path, args.content, NAME)
        verb = "Created" if old is None else "Wrote"
        text = f"{verb} {path} ({line_count(args.content)} lines)"
        return ToolOutput([shown_as(text, views[0]) if views else TextContent(text=text)])
