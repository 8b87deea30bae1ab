"""``read_file {path, line?, limit?}``: read a text file relative to the session cwd.

The tool is docs/contract.md §6.

``line`` (1-based) and ``limit`` select a range of lines; without them the file is read from its
start. Either way the result is bounded: at most ``MAX_LINES`` lines and ``MAX_BYTES`` of text,
whichever comes first (whole lines; the first line always fits), a line longer than
``MAX_LINE_BYTES`` clipped with a note of what was cut. A result the cap cut short (not one the
model's own ``limit`` ended) ends with a note naming the ``line`` to read on from and, when the
rest was counted, how much is left: ``[… file continues: 48,211 more lines; call read_file with
line=2001 to read on]``. Lines end at ``\\n`` only, as in ``fs/read_text_file``.

It reads through the client (``fs/read_text_file``) when the client advertised
``fs.readTextFile`` — the editor then serves unsaved buffer contents — and from the local disk
otherwise. Either way the path must stay inside the session roots, and must not name a pipe,
socket or device (``files.py``: refused before the client is asked, and never opened blocking).
No permission is needed. A local read streams the file: memory and output are bounded however
big it is; only the count of what is left stops at ``COUNT_LIMIT`` bytes (then the note gives the
bytes left). What the client answers is cut the same way (we ask it for at most one line more
than the cap, when the model gave a ``limit``).
"""

from __future__ import annotations

import codecs
import io
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TypeVar

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
from acp_agent.tools.files import open_regular, refuse_special
from acp_agent.tools.guard import authorize_read

NAME = "read_file"
MAX_LINES = 2000
MAX_BYTES = 64 << 10
"""The same 64 KiB as ``search`` and ``run_command`` give their output."""
MAX_LINE_BYTES = 4 << 10
COUNT_LIMIT = 64 << 20
"""Past the window, lines are counted for the note in at most this many bytes."""
_CHUNK = 1 << 20
_S = TypeVar("_S")


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
    name = NAME
    description = (
        "Read a text file. `path` is relative to the session working directory; `line` "
        "(1-based) and `limit` read only that range of lines. At most "
        f"{MAX_LINES} lines or {MAX_BYTES // 1024} KiB per call; a longer file ends with a note "
        "saying which `line` to read on from."
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
        path, line, limit = arguments.get("path"), arguments.get("line"), arguments.get("limit")
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
        refuse_special(path, NAME)
        await authorize_read(ctx, path)
        if ctx.fs is not None:
            window = await _through_client(ctx, path, args)
        else:
            window = await _in_thread(_read_local, path, args)
        return ToolOutput([TextContent(text=window.result(args.limit))])


@dataclass(frozen=True)
class Window:
    """What a read shows: ``text`` from line ``first``, ``lines`` of them. ``capped`` when the
    caps (not the end of the file) ended it; ``more`` whether the file goes on after it, with
    ``more_lines`` / ``more_bytes`` when counted; ``total`` the file's line count when ``first``
    lies past its end."""

    text: str
    first: int
    lines: int
    capped: bool = False
    more: bool = False
    more_lines: int | None = None
    more_bytes: int | None = None
    total: int | None = None

    def result(self, limit: int | None) -> str:
        if self.total is not None:
            return f"[line {self.first} is past the end of the file: it has {self.total} lines]"
        if not self.more or not self.capped or (limit is not None and self.lines >= limit):
            return self.text  # all there is, or all the model asked for
        next_line = self.first + self.lines
        note = f"[… file continues{self._left()}; call read_file with line={next_line} to read on]"
        return self.text + ("" if self.text.endswith("\n") or not self.text else "\n") + note

    def _left(self) -> str:
        if self.more_lines is not None:
            return f": {self.more_lines:,} more lines"
        if self.more_bytes is not None:
            return f": {self.more_bytes:,} more bytes"
        return ""


async def _through_client(ctx: ToolContext, path: Path, args: ReadFileArgs) -> Window:
    assert ctx.fs is not None
    limit = None if args.limit is None else min(args.limit, MAX_LINES + 1)
    try:
        body = await ctx.fs.read_text_file(str(path), args.line, limit)
    except PeerError as exc:
        raise ToolError(f"read_file: the client could not read {path}: {exc.message}") from exc
    return await _in_thread(_window_of_text, body, args)


async def _in_thread(
    read: Callable[[_S, ReadFileArgs, threading.Event], Window], subject: _S, args: ReadFileArgs
) -> Window:
    """Run ``read`` in a worker thread the call can abandon when cancelled; it stops at its next
    chunk once told."""
    stop = threading.Event()
    try:
        return await anyio.to_thread.run_sync(read, subject, args, stop, abandon_on_cancel=True)
    finally:
        stop.set()


def _read_local(path: Path, args: ReadFileArgs, stop: threading.Event) -> Window:
    try:
        fd = open_regular(path, os.O_RDONLY, NAME)
    except FileNotFoundError as exc:
        raise ToolError(f"read_file: no such file: {path}") from exc
    except OSError as exc:
        raise ToolError(f"read_file: cannot read {path}: {exc.strerror}") from exc
    try:
        with open(fd, "rb") as file:
            return read_window(file, (args.line or 1) - 1, args, stop, count_rest=True)
    except UnicodeDecodeError as exc:
        raise ToolError(f"read_file: {path} is not UTF-8 text") from exc
    except OSError as exc:
        raise ToolError(f"read_file: cannot read {path}: {exc.strerror}") from exc


def _window_of_text(body: str, args: ReadFileArgs, stop: threading.Event) -> Window:
    """The client's answer starts at ``line`` already; its rest is all there unless we asked for
    a ``limit``."""
    file = io.BytesIO(body.encode("utf-8"))
    return read_window(file, 0, args, stop, count_rest=args.limit is None)


def read_window(
    file: BinaryIO, skip: int, args: ReadFileArgs, stop: threading.Event, count_rest: bool
) -> Window:
    """The window of ``file`` after ``skip`` lines, for ``args`` (see ``Window``)."""
    first = args.line or 1
    passed = _skip_lines(file, skip, stop)
    if passed < skip:
        return Window("", first, 0, total=passed)
    wanted = min(args.limit or MAX_LINES, MAX_LINES)
    parts, capped = _take_lines(file, wanted, stop)
    if not parts and skip:
        return Window("", first, 0, total=skip)
    more_lines, more_bytes, more = _rest(file, stop) if count_rest else (None, None, _any(file))
    return Window("".join(parts), first, len(parts), capped, more, more_lines, more_bytes)


def _take_lines(file: BinaryIO, wanted: int, stop: threading.Event) -> tuple[list[str], bool]:
    """Up to ``wanted`` lines within ``MAX_BYTES`` (the first always), and whether a cap ended
    them. A line that does not fit is left unread for the next call."""
    parts: list[str] = []
    size = 0
    while len(parts) < wanted and not stop.is_set():
        start = file.tell()
        line = _next_line(file)
        if line is None:
            return parts, False
        length = len(line.encode("utf-8"))
        if parts and size + length > MAX_BYTES:
            file.seek(start)
            return parts, True
        parts.append(line)
        size += length
    return parts, len(parts) == MAX_LINES


def _skip_lines(file: BinaryIO, count: int, stop: threading.Event) -> int:
    """Move past ``count`` lines; how many there were (fewer at the end of the file, a last line
    without a newline counted)."""
    passed, last = 0, b"\n"
    while passed < count and not stop.is_set():
        start = file.tell()
        chunk = file.read(_CHUNK)
        if not chunk:
            return passed + (last != b"\n")
        found = chunk.count(b"\n")
        if passed + found >= count:
            index = -1
            for _ in range(count - passed):
                index = chunk.index(b"\n", index + 1)
            file.seek(start + index + 1)
            return count
        passed, last = passed + found, chunk[-1:]
    return passed


def _next_line(file: BinaryIO) -> str | None:
    """The next line with its newline, clipped at ``MAX_LINE_BYTES`` (the rest of it skipped and
    counted in a note); ``None`` at the end of the file. Not UTF-8: ``UnicodeDecodeError``."""
    head = file.readline(MAX_LINE_BYTES + 1)
    if not head:
        return None
    if len(head) <= MAX_LINE_BYTES or head.endswith(b"\n"):
        return head.decode("utf-8")
    decoder = codecs.getincrementaldecoder("utf-8")()
    kept = decoder.decode(head[:MAX_LINE_BYTES], final=False)  # a split character goes
    dropped, newline = len(head) - MAX_LINE_BYTES + len(decoder.getstate()[0]), ""
    while piece := file.readline(_CHUNK):
        if piece.endswith(b"\n"):
            dropped, newline = dropped + len(piece) - 1, "\n"
            break
        dropped += len(piece)
    return f"{kept}… [line clipped: {dropped:,} more bytes]{newline}"


def _rest(file: BinaryIO, stop: threading.Event) -> tuple[int | None, int | None, bool]:
    """Lines and bytes after the current position: lines counted in ``COUNT_LIMIT`` bytes at
    most (else ``None``), and whether there is anything at all."""
    start, lines, last = file.tell(), 0, b"\n"
    while file.tell() - start < COUNT_LIMIT and not stop.is_set():
        chunk = file.read(_CHUNK)
        if not chunk:
            size = file.tell() - start
            return lines + (last != b"\n"), size, size > 0
        lines, last = lines + chunk.count(b"\n"), chunk[-1:]
    size = file.seek(0, os.SEEK_END) - start
    return None, size, size > 0


def _any(file: BinaryIO) -> bool:
    return bool(file.read(1))
