"""``read_file {path, line?, limit?}``: read a text file relative to the session cwd.

The tool is docs/contract.md §6.

``line`` (1-based) and ``limit`` select a range of lines; without them the whole file is read.

It reads through the client (``fs/read_text_file``) when the client advertised
``fs.readTextFile`` — the editor then serves unsaved buffer contents — and from the local disk
otherwise. Either way the path must stay inside the session roots. No permission is needed.
"""

from __future__ import annotations

import anyio
import msgspec

from acp_agent.content import TextContent
from acp_agent.errors import PeerError
from acp_agent.tools.base import (
    Location,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
    confine,
    shown,
)


class ReadFileArgs(msgspec.Struct, frozen=True):
    path: str
    line: int | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.line is not None and self.line < 1:
            raise ValueError("`line` counts from 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("`limit` must be at least 1")


def _args(arguments: dict[str, object]) -> ReadFileArgs:
    try:
        return msgspec.convert(arguments, ReadFileArgs)
    except msgspec.ValidationError as exc:
        raise ToolError(f"read_file: bad arguments: {exc}") from exc


class ReadFile:
    name = "read_file"
    description = (
        "Read a text file. `path` is relative to the session working directory; `line` "
        "(1-based) and `limit` read only that range of lines."
    )
    kind = ToolKind.READ
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "file path"},
            "line": {"type": "integer", "minimum": 1, "description": "first line to read"},
            "limit": {"type": "integer", "minimum": 1, "description": "how many lines"},
        },
        "required": ["path"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        path, line, limit = (arguments.get(k) for k in ("path", "line", "limit"))
        if not isinstance(path, str):
            return "Read file"
        if isinstance(line, int) and isinstance(limit, int):
            return f"Read {path} (lines {line}-{line + limit - 1})"
        if isinstance(line, int):
            return f"Read {path} (from line {line})"
        return f"Read {path}"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        path = arguments.get("path")
        if not isinstance(path, str):
            return []
        line = arguments.get("line")
        where = shown(path, ctx)
        return [Location(where, line if isinstance(line, int) else None)] if where else []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = _args(arguments)
        path = confine(args.path, ctx)
        if ctx.fs is not None:
            try:
                body = await ctx.fs.read_text_file(str(path), args.line, args.limit)
            except PeerError as exc:
                raise ToolError(
                    f"read_file: the client could not read {path}: {exc.message}"
                ) from exc
        else:
            body = line_range(await _read_local(path), args.line, args.limit)
        return ToolOutput([TextContent(text=body)])


def line_range(body: str, line: int | None, limit: int | None) -> str:
    """Lines ``line`` .. ``line + limit - 1`` (1-based) of ``body``, as ``fs/read_text_file``."""
    if line is None and limit is None:
        return body
    parts = body.split("\n")  # not splitlines(): U+2028 and friends are not line ends here
    lines = [part + "\n" for part in parts[:-1]] + ([parts[-1]] if parts[-1] else [])
    start = (line or 1) - 1
    end = start + limit if limit is not None else None
    return "".join(lines[start:end])


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
