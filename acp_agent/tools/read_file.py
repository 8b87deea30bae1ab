"""``read_file {path}``: read a text file relative to the session cwd (contracts §6).

It reads through the client (``fs/read_text_file``) when the client advertised
``fs.readTextFile`` — the editor then serves unsaved buffer contents — and from the local disk
otherwise. Either way the path must stay inside the session roots. No permission is needed.
"""

from __future__ import annotations

import anyio
import msgspec

from acp_agent.content import TextContent
from acp_agent.errors import PeerError
from acp_agent.tools.base import Location, ToolContext, ToolError, ToolKind, ToolOutput, confine


class ReadFileArgs(msgspec.Struct, frozen=True):
    path: str


def _args(arguments: dict[str, object]) -> ReadFileArgs:
    try:
        return msgspec.convert(arguments, ReadFileArgs)
    except msgspec.ValidationError as exc:
        raise ToolError(f"read_file: bad arguments: {exc}") from exc


class ReadFile:
    name = "read_file"
    description = "Read a text file. `path` is relative to the session working directory."
    kind = ToolKind.READ
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {"path": {"type": "string", "description": "file path"}},
        "required": ["path"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        path = arguments.get("path")
        return f"Read {path}" if isinstance(path, str) else "Read file"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        path = arguments.get("path")
        if not isinstance(path, str):
            return []
        try:
            return [Location(str(confine(path, ctx)))]
        except ToolError:
            return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        path = confine(_args(arguments).path, ctx)
        if ctx.fs is not None:
            try:
                body = await ctx.fs.read_text_file(str(path))
            except PeerError as exc:
                raise ToolError(
                    f"read_file: the client could not read {path}: {exc.message}"
                ) from exc
        else:
            body = await _read_local(path)
        return ToolOutput([TextContent(text=body)])


async def _read_local(path: anyio.Path | object) -> str:
    target = anyio.Path(str(path))
    try:
        return await target.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ToolError(f"read_file: no such file: {path}") from exc
    except IsADirectoryError as exc:
        raise ToolError(f"read_file: {path} is a directory") from exc
    except UnicodeDecodeError as exc:
        raise ToolError(f"read_file: {path} is not UTF-8 text") from exc
    except OSError as exc:
        raise ToolError(f"read_file: cannot read {path}: {exc.strerror}") from exc
