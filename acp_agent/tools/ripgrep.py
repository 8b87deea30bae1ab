"""ripgrep (``rg``) for ``search``, ``glob`` and ``list_dir``: finding it, the walk's flags, a
bounded run.

Theory of operation
-------------------
The tools walk the workspace the way a user's own tools do: ``.gitignore`` (and the ``.git/
info/exclude`` and global excludes git would read), ``.ignore`` and ``.rgignore`` honoured,
binary files skipped, directory links not followed. ripgrep implements exactly that, so the
walk is rg's. Its binary comes from the ``ripgrep`` wheel (a dependency: ``rg`` beside the
interpreter's scripts) or else from ``PATH``; ``find_rg`` answers ``None`` where neither
exists, and each tool then walks in Python and says in its result that ignore files were not
applied (``NOT_FILTERED``).

Outside a git repository rg ignores ``.gitignore`` files unless told ``--no-require-git``. A
user who writes a ``.gitignore`` expects it to count in any workspace, so ``walk_flags`` passes
it when no ``.git`` is found in the top directory or above it (inside a repository rg's own
rule, stopping at the repository's root, is the right one).

``run_rg`` runs rg as a real subprocess (no shell), reading its stdout as NUL- or
newline-separated records, each clipped at ``MAX_RECORD_BYTES`` however long the line is, and
its stderr up to ``MAX_STDERR_BYTES``. The caller's ``take`` sees each record and answers
whether it wants more; once it does not, or the call is cancelled, rg is killed and reaped.
"""

from __future__ import annotations

import functools
import os
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import msgspec
from anyio.abc import ByteReceiveStream

SKIP_DIRS = (
    ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
    ".ruff_cache", ".pytest_cache",
)  # fmt: skip
"""Skipped even when nothing ignores them: version control and tool caches."""
NOT_FILTERED = "ignore files (.gitignore, .ignore) were not applied: ripgrep (rg) was not found"
MAX_RECORD_BYTES = 8 << 10
MAX_STDERR_BYTES = 256 << 10
_CHUNK = 64 << 10


class RgRun(msgspec.Struct):
    """How a run ended: rg's exit code (``None`` when it was killed because ``take`` had
    enough) and the start of its stderr."""

    code: int | None
    stderr: bytes


@functools.cache
def find_rg() -> str | None:
    """The ``rg`` to run: the ``ripgrep`` wheel's (installed beside this interpreter's
    scripts), else the first on ``PATH``; ``None`` when there is none. Imports here: shutil
    is not on the path to the first session (``tests/integration/test_startup.py``)."""
    import shutil
    import sysconfig

    beside = Path(sysconfig.get_path("scripts"), "rg")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("rg")


def walk_flags(top: Path, *, skip: bool = True) -> list[str]:
    """The flags every walk shares: no user config file, no colour, the skipped directories
    (unless not ``skip``), and ``--no-require-git`` outside a git repository (see the module
    docstring)."""
    flags = ["--no-config", "--color", "never"]
    for name in SKIP_DIRS if skip else ():
        flags += ["--glob", f"!{name}/"]
    if not in_git_repository(top):
        flags.append("--no-require-git")
    return flags


def in_git_repository(top: Path) -> bool:
    return any(os.path.lexists(directory / ".git") for directory in (top, *top.parents))


async def ignored_entries(rg: str, directory: Path) -> set[str]:
    """The names of ``directory``'s entries that its ignore files (or its parents') exclude.

    ``rg --files`` lists files only, and a directory's being ignored shows in nothing rg
    prints but its debug log: one line ``... ignoring ./NAME: Ignore(...)`` per ignored entry
    (the ``ignore`` crate's ``walk.rs``; ``tests/tools/test_ripgrep_walk.py`` holds the shape
    down for the pinned rg), read here as it comes."""
    ignored: set[str] = set()

    def note(line: bytes) -> bool:
        _, marker, rest = line.partition(b" ignoring ./")
        end = rest.find(b": Ignore(")
        if marker and b"ignore::walk" in line and end > 0:
            ignored.add(os.fsdecode(rest[:end]))
        return True

    argv = [rg, "--files", "--hidden", "--max-depth", "1", "--debug"]
    argv += [*walk_flags(directory, skip=False), "--", "."]
    await run_rg(argv, directory, lambda _file: True, errors=note)
    return ignored


async def run_rg(
    argv: Sequence[str],
    cwd: Path,
    take: Callable[[bytes], bool],
    *,
    separator: bytes = b"\n",
    errors: Callable[[bytes], bool] | None = None,
) -> RgRun:
    """Run ``rg`` with ``argv`` in ``cwd``, handing each stdout record (without its
    ``separator``) to ``take`` until it answers ``False``; rg is killed then, and on cancel.
    ``errors``, when given, sees each stderr line instead of its start being kept."""
    process = await anyio.open_process(
        list(argv),
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stderr = bytearray()
    enough = False
    try:
        async with anyio.create_task_group() as tg:
            assert process.stdout is not None and process.stderr is not None
            if errors is None:
                tg.start_soon(_read_start, process.stderr, stderr)
            else:
                tg.start_soon(_read_records, process.stderr, errors, b"\n")
            enough = not await _read_records(process.stdout, take, separator)
            if enough:
                process.kill()
        code = await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.CancelScope(shield=True):
                await process.wait()
    return RgRun(None if enough else code, bytes(stderr))


async def _read_records(
    stream: ByteReceiveStream, take: Callable[[bytes], bool], separator: bytes
) -> bool:
    """Feed ``take`` until it has enough (``False``) or the stream ends (``True``)."""
    pending = bytearray()
    clipped = False  # the current record passed MAX_RECORD_BYTES: the rest of it is dropped
    async for chunk in stream:
        start = 0
        while (end := chunk.find(separator, start)) >= 0:
            if not clipped:
                pending += chunk[start:end]
            if not take(bytes(pending[:MAX_RECORD_BYTES])):
                return False
            pending.clear()
            clipped, start = False, end + len(separator)
        if not clipped:
            pending += chunk[start:]
            clipped = len(pending) > MAX_RECORD_BYTES
            del pending[MAX_RECORD_BYTES:]
    return not pending or take(bytes(pending))


async def _read_start(stream: ByteReceiveStream, into: bytearray) -> None:
    async for chunk in stream:
        into += chunk[: max(0, MAX_STDERR_BYTES - len(into))]
