"""``multi_edit {path, edits: [{old_string, new_string, replace_all?}]}``: several exact
replacements in one file, all or nothing.

The edits apply in order, each to the text the ones before it left (so a later edit may match
text an earlier one wrote), with ``edit_file``'s rules for each (``edit_file.substitute``:
exact, unique unless ``replace_all``). Every edit is checked before anything is asked or
written: one failing edit fails the call naming it, and the file is untouched. Then one
permission request (action ``edit``) with one ``diff`` of the whole file (old -> new), and one
write, through the client when it can (``files.py``), exactly as ``edit_file``.
"""

from __future__ import annotations

import msgspec

from acp_agent.content import TextContent
from acp_agent.tools.args import located, parse, string
from acp_agent.tools.base import Location, ToolContext, ToolError, ToolKind, ToolOutput, confine
from acp_agent.tools.display import DiffView, View, shown_as
from acp_agent.tools.edit_file import substitute
from acp_agent.tools.files import diffable, read_current, write_text
from acp_agent.tools.guard import authorize_edit

NAME = "multi_edit"
MAX_EDITS = 100


class Edit(msgspec.Struct, frozen=True):
    old_string: str
    new_string: str
    replace_all: bool = False


class MultiEditArgs(msgspec.Struct, frozen=True):
    path: str
    edits: list[Edit]


_EDIT_SCHEMA: dict[str, object] = {
    "type": "object",
    "properties": {
        "old_string": {"type": "string"},
        "new_string": {"type": "string"},
        "replace_all": {"type": "boolean"},
    },
    "required": ["old_string", "new_string"],
}


class MultiEdit:
    name = NAME
    description = (
        "Several `edit_file` replacements in one file, applied in order, all or nothing (one "
        "failing edit changes nothing)."
    )
    kind = ToolKind.EDIT
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path"},
            "edits": {
                "type": "array",
                "items": _EDIT_SCHEMA,
                "minItems": 1,
                "maxItems": MAX_EDITS,
            },
        },
        "required": ["path", "edits"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        path, edits = string(arguments, "path"), arguments.get("edits")
        count = f" ({len(edits)} edits)" if isinstance(edits, list) else ""
        return f"Edit {path}{count}" if path else "Edit file"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return located(arguments, ctx)

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, MultiEditArgs, NAME)
        if not args.edits:
            raise ToolError(f"{NAME}: edits is empty; give at least one edit")
        if len(args.edits) > MAX_EDITS:
            raise ToolError(f"{NAME}: {len(args.edits)} edits; at most {MAX_EDITS} per call")
        path = confine(args.path, ctx)
        old = await read_current(ctx, path, NAME)
        if old is None:
            raise ToolError(f"{NAME}: no such file: {path} (use write_file to create one)")
        new, count = apply_all(old, args)
        views: list[View] = [DiffView(str(path), new, old)] if diffable(old, new) else []
        await authorize_edit(ctx, path, views)
        await write_text(ctx, path, new, NAME)
        edits = "edit" if len(args.edits) == 1 else "edits"
        plural = "occurrence" if count == 1 else "occurrences"
        text = f"Edited {path}: {len(args.edits)} {edits}, replaced {count} {plural}"
        return ToolOutput([shown_as(text, views[0]) if views else TextContent(text=text)])


def apply_all(text: str, args: MultiEditArgs) -> tuple[str, int]:
    """The text after every edit and the occurrences replaced; ``ToolError`` naming the first
    edit that fails (nothing has been written: this only computes)."""
    total = 0
    for number, edit in enumerate(args.edits, 1):
        tool = f"{NAME}: edit {number} of {len(args.edits)}"
        where = args.path if number == 1 else f"{args.path} (after the edits before it)"
        try:
            text, count = substitute(
                text, edit.old_string, edit.new_string, edit.replace_all, tool, where
            )
        except ToolError as exc:
            raise ToolError(f"{exc}; nothing was changed") from exc
        total += count
    return text, total
