"""``search {pattern, path?, glob?, ignore_case?, max_results?}``: a regex over workspace files.

Walks ``path`` (default the cwd; inside the session roots) in sorted order without following
directory links, skipping version-control and tool caches (``SKIP_DIRS``), files over
``MAX_FILE_BYTES``, files that look binary (a NUL byte in the first 8 KiB), files whose real
path leaves the roots and whatever is not a regular file (a pipe, socket or device: files are
opened only through ``files.open_regular``, which never blocks and lets the opened descriptor
decide; a ``path`` naming one is refused). Each match is one line ``path:line: text`` (path
relative to the cwd when it is inside it), a line clipped at ``MAX_LINE_CHARS``. Output is
bounded: at most ``max_results`` matches (default 100, at most 500), ``MAX_OUTPUT_CHARS``
characters and ``MAX_FILES`` files scanned; the result says when it stopped early. Python ``re``
syntax. Reads the local disk (ACP has no search in the client's file system); runs in a worker
thread that stops at the next file once the call is cancelled.
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from collections.abc import Callable
from pathlib import Path

import anyio
import msgspec

from acp_agent.content import TextContent
from acp_agent.tools.args import located, parse, string
from acp_agent.tools.base import (
    Location,
    ToolContext,
    ToolError,
    ToolKind,
    ToolOutput,
    confine,
)
from acp_agent.tools.files import open_regular
from acp_agent.tools.guard import authorize_read, withheld_reads

NAME = "search"
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".mypy_cache",
     ".ruff_cache", ".pytest_cache"}
)  # fmt: skip
DEFAULT_RESULTS = 100
MAX_RESULTS = 500
MAX_FILES = 20_000
MAX_FILE_BYTES = 2 << 20
MAX_LINE_CHARS = 300
MAX_OUTPUT_CHARS = 64 << 10


class SearchArgs(msgspec.Struct, frozen=True):
    pattern: str
    path: str = "."
    glob: str | None = None
    ignore_case: bool = False
    max_results: int = DEFAULT_RESULTS


class Search:
    name = NAME
    description = (
        "Search file contents with a regular expression (Python syntax) under `path` (default "
        "the working directory). `glob` filters file names (e.g. `*.py`). Returns "
        "`path:line: text` lines, bounded."
    )
    kind = ToolKind.SEARCH
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "regular expression"},
            "path": {"type": "string", "description": "directory or file (default `.`)"},
            "glob": {"type": "string", "description": "file name pattern, e.g. `*.py`"},
            "ignore_case": {"type": "boolean", "description": "case-insensitive (default false)"},
            "max_results": {
                "type": "integer",
                "minimum": 1,
                "maximum": MAX_RESULTS,
                "description": f"most matches to return (default {DEFAULT_RESULTS})",
            },
        },
        "required": ["pattern"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        pattern, path = string(arguments, "pattern"), string(arguments, "path")
        where = f" in {path}" if path and path != "." else ""
        return f"Search /{pattern}/{where}" if pattern is not None else "Search"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return located(arguments, ctx, default=".")

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, SearchArgs, NAME)
        try:
            regex = re.compile(args.pattern, re.IGNORECASE if args.ignore_case else 0)
        except re.error as exc:
            raise ToolError(f"{NAME}: bad pattern {args.pattern!r}: {exc}") from exc
        top = confine(args.path, ctx)
        await authorize_read(ctx, top)
        walk = _Walk(
            regex,
            top,
            ctx.cwd.resolve(),
            tuple(root.resolve() for root in ctx.all_roots()),
            args.glob,
            max(1, min(args.max_results, MAX_RESULTS)),
            withheld_reads(ctx),
        )
        try:
            await anyio.to_thread.run_sync(walk.run, abandon_on_cancel=True)
        finally:
            walk.stop.set()
        return ToolOutput([TextContent(text=walk.report(args.pattern))])


class _Walk(msgspec.Struct):
    regex: re.Pattern[str]
    top: Path
    cwd: Path
    roots: tuple[Path, ...]
    glob: str | None
    max_results: int
    withheld: Callable[[Path], bool] | None = None
    stop: threading.Event = msgspec.field(default_factory=threading.Event)
    lines: list[str] = msgspec.field(default_factory=list)
    chars: int = 0
    files: int = 0
    stopped: str | None = None

    def run(self) -> None:
        if not self.top.is_dir():
            self._search_named(self.top)
            return
        for directory, dirs, names in os.walk(self.top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                if self.stopped or self.stop.is_set():
                    return
                if self.glob is None or fnmatch.fnmatch(name, self.glob):
                    self._search_file(Path(directory, name))

    def _search_named(self, path: Path) -> None:
        """``path`` named by the call: a missing or non-regular file is an error, not a skip."""
        try:
            os.close(open_regular(path, os.O_RDONLY, NAME))
        except FileNotFoundError as exc:
            raise ToolError(f"{NAME}: no such file or directory: {path}") from exc
        except OSError as exc:
            raise ToolError(f"{NAME}: cannot read {path}: {exc.strerror}") from exc
        self._search_file(path)

    def _search_file(self, path: Path) -> None:
        self.files += 1
        if self.files > MAX_FILES:
            self.stopped = f"stopped after scanning {MAX_FILES} files"
            return
        text = self._text(path)
        if text is None:
            return
        for number, line in enumerate(text.split("\n"), 1):
            if self.regex.search(line):
                self._add(f"{self._shown(path)}:{number}: {_clip(line.rstrip(chr(13)))}")
                if self.stopped:
                    return

    def _text(self, path: Path) -> str | None:
        """The file's text, or ``None`` to skip it (outside the roots, not a regular file, too
        big, unreadable, binary). Reads at most ``MAX_FILE_BYTES`` + 1 bytes, however it grows."""
        try:
            real = path.resolve()
            if not any(real.is_relative_to(root) for root in self.roots):
                return None
            if self.withheld is not None and self.withheld(real):
                return None
            with open(open_regular(real, os.O_RDONLY, NAME), "rb") as file:
                if os.fstat(file.fileno()).st_size > MAX_FILE_BYTES:
                    return None
                data = file.read(MAX_FILE_BYTES + 1)
        except (OSError, ToolError):
            return None
        if len(data) > MAX_FILE_BYTES or b"\0" in data[:8192]:
            return None
        return data.decode("utf-8", "replace")

    def _add(self, line: str) -> None:
        if self.chars + len(line) + 1 > MAX_OUTPUT_CHARS:
            self.stopped = f"output limit of {MAX_OUTPUT_CHARS} characters reached"
            return
        self.lines.append(line)
        self.chars += len(line) + 1
        if len(self.lines) >= self.max_results:
            self.stopped = f"showing the first {self.max_results} matches"

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.cwd)) if path.is_relative_to(self.cwd) else str(path)

    def report(self, pattern: str) -> str:
        if not self.lines:
            return f"no matches for /{pattern}/ in {self.top}"
        note = f"\n[{self.stopped}; narrow the search for more]" if self.stopped else ""
        return "\n".join(self.lines) + note


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
