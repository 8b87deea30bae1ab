"""``list_dir {path?}``: the entries of a directory inside the session roots.

One entry per line, sorted by name, directories marked with a trailing ``/`` and symbolic links
with `` -> target``; at most ``MAX_ENTRIES`` lines (the rest is counted). Read from the local
disk: ACP has no directory listing for the client's file system.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import msgspec

from acp_agent.content import TextContent
from acp_agent.tools.args import parse, string
from acp_agent.tools.base import (
    Location,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
    confine,
    shown,
)

NAME = "list_dir"
MAX_ENTRIES = 1000


class ListDirArgs(msgspec.Struct, frozen=True):
    path: str = "."


class ListDir:
    name = NAME
    description = (
        "List a directory: one entry per line, directories end with `/`. `path` is relative to "
        "the session working directory (default: the working directory itself)."
    )
    kind = ToolKind.SEARCH
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {"path": {"type": "string", "description": "directory (default `.`)"}},
    }

    def title(self, arguments: dict[str, object]) -> str:
        return f"List {string(arguments, 'path') or '.'}"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        where = shown(string(arguments, "path") or ".", ctx)
        return [Location(where)] if where else []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        path = confine(parse(arguments, ListDirArgs, NAME).path, ctx)
        lines = await anyio.to_thread.run_sync(_listing, path)
        return ToolOutput([TextContent(text="\n".join(lines))])


def _listing(path: Path) -> list[str]:
    try:
        with os.scandir(path) as scan:
            entries = sorted(scan, key=lambda entry: entry.name)
    except FileNotFoundError as exc:
        raise ToolError(f"{NAME}: no such directory: {path}") from exc
    except NotADirectoryError as exc:
        raise ToolError(f"{NAME}: {path} is not a directory") from exc
    except OSError as exc:
        raise ToolError(f"{NAME}: cannot list {path}: {exc.strerror}") from exc
    if not entries:
        return [f"{path}: (empty directory)"]
    lines = [_entry(entry) for entry in entries[:MAX_ENTRIES]]
    if len(entries) > MAX_ENTRIES:
        lines.append(f"[{len(entries) - MAX_ENTRIES} more entries not shown]")
    return lines


def _entry(entry: os.DirEntry[str]) -> str:
    if entry.is_symlink():
        try:
            return f"{entry.name} -> {os.readlink(entry.path)}"
        except OSError:
            return f"{entry.name} -> ?"
    return f"{entry.name}/" if entry.is_dir() else entry.name
