"""Reading and writing whole text files for the editing tools, through the client when it can.

Reads go through ``fs/read_text_file`` when the client advertised it (the editor answers with
unsaved buffer contents); a client error falls back to the disk, where a missing file is a new
file. Writes go through ``fs/write_text_file`` when advertised (the editor updates its buffers),
else to the disk, creating missing parent directories (they are inside the roots: the path was
confined). Local text is read and written byte-exact: UTF-8, no newline translation.
"""

from __future__ import annotations

from pathlib import Path

import anyio

from acp_agent.errors import PeerError
from acp_agent.tools.base import ToolContext, ToolError

DIFF_LIMIT = 256 << 10
"""Old plus new text larger than this is not shown as a diff (the result says what changed)."""


async def read_current(ctx: ToolContext, path: Path, tool: str) -> str | None:
    """The file's text now, or ``None`` when there is no such file."""
    if ctx.fs is not None:
        try:
            return await ctx.fs.read_text_file(str(path))
        except PeerError:
            pass  # not the client's to know (say, a file it has no buffer for): ask the disk
    return await anyio.to_thread.run_sync(_read_local, path, tool)


def _read_local(path: Path, tool: str) -> str | None:
    try:
        with path.open(encoding="utf-8", newline="") as file:
            return file.read()
    except FileNotFoundError:
        return None
    except IsADirectoryError as exc:
        raise ToolError(f"{tool}: {path} is a directory") from exc
    except UnicodeDecodeError as exc:
        raise ToolError(f"{tool}: {path} is not UTF-8 text") from exc
    except OSError as exc:
        raise ToolError(f"{tool}: cannot read {path}: {exc.strerror}") from exc


async def write_text(ctx: ToolContext, path: Path, content: str, tool: str) -> None:
    if ctx.writer is not None:
        try:
            await ctx.writer.write_text_file(str(path), content)
        except PeerError as exc:
            raise ToolError(f"{tool}: the client could not write {path}: {exc.message}") from exc
        return
    await anyio.to_thread.run_sync(_write_local, path, content, tool)


def _write_local(path: Path, content: str, tool: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8", newline="") as file:
            file.write(content)
    except IsADirectoryError as exc:
        raise ToolError(f"{tool}: {path} is a directory") from exc
    except OSError as exc:
        raise ToolError(f"{tool}: cannot write {path}: {exc.strerror}") from exc


def diffable(old: str | None, new: str) -> bool:
    return len(old or "") + len(new) <= DIFF_LIMIT


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)
