"""Opening workspace files safely, and reading and writing whole text files for the editing tools.

Only regular files
------------------
A named pipe blocks whoever opens it until its other side opens, in a worker thread nothing can
cancel (``session/cancel`` then waits forever); a device such as ``/dev/zero`` never ends; a
socket cannot be opened at all. So every file tool opens through ``open_regular``, whose
invariants are: *it never blocks on what it opens*, and *it returns a descriptor only of a
regular file*. It stats the name first (a device is not even opened: opening one can act, and
the refusal can name the kind), then opens with ``O_NONBLOCK`` (a FIFO's read side opens at
once; its write side without a reader, and a socket, fail ``ENXIO``), and lets the opened
descriptor's own ``fstat`` decide, since the name may have changed since the stat. Anything else
is refused with ``<path> is a named pipe, not a regular file: refused`` (``refuse_special``, a
stat only, keeps such a path from the client as well). If you add a file tool, open through here.

Whole files
-----------
Every write of an edit tool goes through ``write_text``, which records the file in the session's
checkpoints first (``ctx.checkpoints``).

Reads go through ``fs/read_text_file`` when the client advertised it (the editor answers with
unsaved buffer contents); a client error falls back to the disk, where a missing file is a new
file. Writes go through ``fs/write_text_file`` when advertised (the editor updates its buffers),
else to the disk, creating missing parent directories (they are inside the roots: the path was
confined). Local text is read and written byte-exact: UTF-8, no newline translation.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import anyio

from acp_agent.errors import PeerError
from acp_agent.tools.base import ToolContext, ToolError

DIFF_LIMIT = 256 << 10
"""Old plus new text larger than this is not shown as a diff (the result says what changed)."""

_KINDS = (
    (stat.S_ISFIFO, "named pipe"),
    (stat.S_ISSOCK, "socket"),
    (stat.S_ISCHR, "character device"),
    (stat.S_ISBLK, "block device"),
)


def kind_of(mode: int) -> str | None:
    """What a file of ``mode`` is in words, or ``None`` for a regular file or a directory."""
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((words for test, words in _KINDS if test(mode)), "special file")


def refuse_special(path: Path, tool: str) -> None:
    """Refuse ``path`` unless it is a regular file, or missing (it may be created, or be a client
    buffer). A stat only, following links: it opens nothing, so it cannot block."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return  # missing or unreadable: the open says so
    _refuse_unless_regular(path, mode, tool)


def _refuse_unless_regular(path: Path, mode: int, tool: str) -> None:
    if stat.S_ISDIR(mode):
        raise ToolError(f"{tool}: {path} is a directory")
    kind = kind_of(mode)
    if kind is not None:
        raise ToolError(f"{tool}: {path} is a {kind}, not a regular file: refused")


def open_regular(path: Path, flags: int, tool: str) -> int:
    """A blocking-mode descriptor of ``path`` opened with ``flags``, only if it is a regular file
    (``ToolError`` otherwise; see the module docstring). The caller closes it. ``OSError``
    (``FileNotFoundError`` included) is the caller's to report; ``O_TRUNC`` would act before the
    check, so writers truncate the descriptor instead."""
    refuse_special(path, tool)
    try:
        fd = os.open(path, flags | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a socket, or a pipe's write side: became one meanwhile
            refuse_special(path, tool)
        raise
    try:
        _refuse_unless_regular(path, os.fstat(fd).st_mode, tool)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


async def read_current(ctx: ToolContext, path: Path, tool: str) -> str | None:
    """The file's text now, or ``None`` when there is no such file."""
    refuse_special(path, tool)  # never hand the client a pipe to block on either
    if ctx.fs is not None:
        try:
            return await ctx.fs.read_text_file(str(path))
        except PeerError:
            pass  # not the client's to know (say, a file it has no buffer for): ask the disk
    return await anyio.to_thread.run_sync(_read_local, path, tool)


def _read_local(path: Path, tool: str) -> str | None:
    try:
        fd = open_regular(path, os.O_RDONLY, tool)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ToolError(f"{tool}: cannot read {path}: {exc.strerror}") from exc
    try:
        with open(fd, encoding="utf-8", newline="") as file:
            return file.read()
    except UnicodeDecodeError as exc:
        raise ToolError(f"{tool}: {path} is not UTF-8 text") from exc
    except OSError as exc:
        raise ToolError(f"{tool}: cannot read {path}: {exc.strerror}") from exc


async def write_text(ctx: ToolContext, path: Path, content: str, tool: str) -> None:
    """Write ``path`` (confined) whole; with ``ctx.checkpoints``, recorded just before and after
    the write (``checkpoints/recorder.py``), so ``/undo`` can put it back."""
    recorder = ctx.checkpoints
    if recorder is None:
        await _write(ctx, path, content, tool)
        return
    pending = await recorder.before_files([path], ctx.all_roots())
    try:
        await _write(ctx, path, content, tool)
    finally:
        await recorder.after(pending)


async def _write(ctx: ToolContext, path: Path, content: str, tool: str) -> None:
    if ctx.writer is not None:
        try:
            await ctx.writer.write_text_file(str(path), content)
        except PeerError as exc:
            raise ToolError(f"{tool}: the client could not write {path}: {exc.message}") from exc
        return
    await anyio.to_thread.run_sync(_write_local, path, content, tool)


def _write_local(path: Path, content: str, tool: str) -> None:
    """Create or replace ``path``: opened without truncation, truncated only once it is known to
    be a regular file (a pipe or device at the target is refused, never written)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_regular(path, os.O_WRONLY | os.O_CREAT, tool)
        with open(fd, "w", encoding="utf-8", newline="") as file:
            file.truncate(0)
            file.write(content)
    except OSError as exc:
        raise ToolError(f"{tool}: cannot write {path}: {exc.strerror}") from exc


def diffable(old: str | None, new: str) -> bool:
    return len(old or "") + len(new) <= DIFF_LIMIT


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)
