"""``list_dir {path?}``: the entries of a directory inside the session roots.

One entry per line, sorted by name, directories marked with a trailing ``/``, symbolic links
with `` -> target`` (clipped at ``MAX_TARGET_CHARS``) and what is neither a regular file nor a
directory with its kind, ``notes (named pipe)``, so the model knows not to read it (the file
tools refuse it; ``files.py``). Bounded: at most ``MAX_ENTRIES`` lines and ``MAX_OUTPUT_CHARS``
characters, the rest counted; memory too (the first entries by name are kept in a heap, not the
whole directory in a list). Listing opens no entry, so it never blocks on a pipe. Read from the
local disk: ACP has no directory listing for the client's file system.

Entries that ``.gitignore``, ``.ignore`` or ``.git/info/exclude`` exclude are left out, as
``search`` and ``glob`` leave them out (rg decides: ``ripgrep.ignored_entries``), and counted
in a last line; hidden entries are listed. Without rg every entry is listed and the result
ends with ``ripgrep.NOT_FILTERED``.
"""

from __future__ import annotations

import heapq
import itertools
import os
from pathlib import Path

import anyio
import msgspec

from acp_agent.content import TextContent
from acp_agent.tools import ripgrep
from acp_agent.tools.args import located, parse, string
from acp_agent.tools.base import (
    Location,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
    confine,
)
from acp_agent.tools.files import kind_of
from acp_agent.tools.guard import authorize_read

NAME = "list_dir"
MAX_ENTRIES = 1000
MAX_OUTPUT_CHARS = 64 << 10
MAX_TARGET_CHARS = 300


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
        return located(arguments, ctx, default=".")

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        path = confine(parse(arguments, ListDirArgs, NAME).path, ctx)
        await authorize_read(ctx, path)
        rg = ripgrep.find_rg()
        ignored: set[str] | None = None
        if rg is not None and path.is_dir():
            ignored = await ripgrep.ignored_entries(rg, path)
        lines = await anyio.to_thread.run_sync(_listing, path, ignored)
        return ToolOutput([TextContent(text="\n".join(lines))])


def _listing(path: Path, ignored: set[str] | None) -> list[str]:
    """``ignored``: the names left out; ``None`` when rg could not say (none left out)."""
    total, entries = _first_entries(path, ignored or set())
    notes = [f"[{ripgrep.NOT_FILTERED}]"] if ignored is None else []
    if ignored:
        notes.insert(0, f"[{len(ignored)} ignored entries (.gitignore, .ignore) not shown]")
    if not entries:
        return [f"{path}: (empty directory)", *notes]
    lines: list[str] = []
    chars = 0
    for entry in entries:
        line = _entry(entry)
        if chars + len(line) + 1 > MAX_OUTPUT_CHARS:
            break
        lines.append(line)
        chars += len(line) + 1
    if total > len(lines):
        lines.append(f"[{total - len(lines)} more entries not shown]")
    return lines + notes


def _first_entries(path: Path, ignored: set[str]) -> tuple[int, list[os.DirEntry[str]]]:
    """How many entries ``path`` has (those named in ``ignored`` aside), and the first
    ``MAX_ENTRIES`` of them by name."""
    counter = itertools.count()
    try:
        with os.scandir(path) as scan:
            kept = (entry for entry in scan if entry.name not in ignored)
            counted = (entry for entry, _ in zip(kept, counter, strict=False))
            first = heapq.nsmallest(MAX_ENTRIES, counted, key=lambda entry: entry.name)
    except FileNotFoundError as exc:
        raise ToolError(f"{NAME}: no such directory: {path}") from exc
    except NotADirectoryError as exc:
        kind = _kind(path)
        raise ToolError(f"{NAME}: {path} is {kind}, not a directory") from exc
    except OSError as exc:
        raise ToolError(f"{NAME}: cannot list {path}: {exc.strerror}") from exc
    return next(counter), first


def _kind(path: Path) -> str:
    try:
        kind = kind_of(os.stat(path).st_mode)
    except OSError:
        kind = None
    return f"a {kind}" if kind else "a file"


def _entry(entry: os.DirEntry[str]) -> str:
    """One line: ``name``, ``name/``, ``name -> target`` or ``name (named pipe)``. ``DirEntry``
    answers from the directory itself where it can; only an entry of another kind is stat-ed."""
    if entry.is_symlink():
        try:
            return f"{entry.name} -> {_clip(os.readlink(entry.path))}"
        except OSError:
            return f"{entry.name} -> ?"
    if entry.is_dir():
        return f"{entry.name}/"
    if entry.is_file():
        return entry.name
    try:
        kind = kind_of(entry.stat(follow_symlinks=False).st_mode)
    except OSError:
        kind = None
    return f"{entry.name} ({kind})" if kind else entry.name


def _clip(target: str) -> str:
    return target if len(target) <= MAX_TARGET_CHARS else target[:MAX_TARGET_CHARS] + "…"
