"""``edit_file {path, old_string, new_string, replace_all?}``: exact search and replace.

``old_string`` must occur in the file exactly once (or at least once with ``replace_all``);
matching is exact, whitespace included. The change is shown as a ``diff`` of the replaced text
(``old_string`` -> ``new_string``) in the permission request and in the result. The file is read
as the client sees it (unsaved buffers) and written back through the client when it can
(``files.py``).
"""

from __future__ import annotations

import msgspec

from acp_agent.content import TextContent
from acp_agent.tools.args import located, parse, string
from acp_agent.tools.base import Location, ToolContext, ToolError, ToolKind, ToolOutput, confine
from acp_agent.tools.display import DiffView, View, shown_as
from acp_agent.tools.files import diffable, read_current, write_text
from acp_agent.tools.guard import authorize_edit

NAME = "edit_file"


class EditFileArgs(msgspec.Struct, frozen=True):
    path: str
    old_string: str
    new_string: str
    replace_all: bool = False


class EditFile:
    name = NAME
    description = (
        "Replace exact text in a file. `old_string` must match the file exactly (whitespace and "
        "indentation included) and occur once, unless `replace_all` is true; include enough "
        "surrounding lines to make it unique. Read the file first."
    )
    kind = ToolKind.EDIT
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path"},
            "old_string": {"type": "string", "description": "the exact text to replace"},
            "new_string": {"type": "string", "description": "the replacement text"},
            "replace_all": {
                "type": "boolean",
                "description": "replace every occurrence (default false)",
            },
        },
        "required": ["path", "old_string", "new_string"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        path = string(arguments, "path")
        return f"Edit {path}" if path else "Edit file"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return located(arguments, ctx)

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, EditFileArgs, NAME)
        path = confine(args.path, ctx)
        old = await read_current(ctx, path, NAME)
        if old is None:
            raise ToolError(f"{NAME}: no such file: {path} (use write_file to create one)")
        new, count = replace(old, args)
        views: list[View] = []
        if diffable(args.old_string, args.new_string):
            views.append(DiffView(str(path), args.new_string, args.old_string))
        await authorize_edit(ctx, path, views)
        await write_text(ctx, path, new, NAME)
        plural = "occurrence" if count == 1 else "occurrences"
        text = f"Edited {path}: replaced {count} {plural}"
        return ToolOutput([shown_as(text, views[0]) if views else TextContent(text=text)])


def replace(text: str, args: EditFileArgs) -> tuple[str, int]:
    """The edited text and how many occurrences were replaced; ``ToolError`` if ambiguous."""
    return substitute(text, args.old_string, args.new_string, args.replace_all, NAME, args.path)


def substitute(
    text: str, old: str, new: str, replace_all: bool, tool: str, where: str
) -> tuple[str, int]:
    """``text`` with ``old`` replaced by ``new`` and the count; ``ToolError`` (prefixed ``tool``,
    naming ``where``) when ``old`` is empty, unchanged, missing, or ambiguous without
    ``replace_all``. Shared by ``edit_file`` and ``multi_edit``."""
    if not old:
        raise ToolError(f"{tool}: old_string is empty (use write_file to create a file)")
    if old == new:
        raise ToolError(f"{tool}: old_string and new_string are the same; nothing to change")
    count = text.count(old)
    if count == 0:
        raise ToolError(f"{tool}: old_string was not found in {where} (it must match exactly)")
    if count > 1 and not replace_all:
        raise ToolError(
            f"{tool}: old_string occurs {count} times in {where}; add surrounding lines to "
            "make it unique, or set replace_all"
        )
    return text.replace(old, new), count
