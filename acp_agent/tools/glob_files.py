"""``glob {pattern, path?}``: the files whose path matches a glob pattern, newest first.

The pattern is matched against each file's path relative to ``path`` (default the cwd; a
directory inside the session roots), segment by segment with ``fnmatch`` rules, case-sensitive:
``*``, ``?`` and ``[...]`` never cross a ``/``; a ``**`` segment matches any number of
directories, none included (``**/*.py`` is every Python file, ``src/*.py`` only those directly
in ``src``). Names starting with a dot match like any other. Only files are answered, not
directories.

The walk is rg's (``rg --files``, ``ripgrep.py``), as ``search``'s but with hidden files: files
ignored by ``.gitignore``, ``.ignore`` or ``.git/info/exclude`` are skipped, so are the
version-control and tool caches (``ripgrep.SKIP_DIRS``: ``.git`` ...) and links (rg lists no
links); in sorted path order, no deeper than the pattern when it has no ``**``, at most
``MAX_SCANNED`` files (rg is killed past them). Without rg the walk is Python's ``os.walk``
(sorted, not following directory links, the same caches skipped, a link to a file counted
when its target stays inside the roots), and the result ends with ``ripgrep.NOT_FILTERED``.
Results are sorted by modification time, newest first (what changed last is what the model
most likely wants), then by path; at most ``MAX_RESULTS`` paths (relative to the cwd when
inside it), the rest counted. Local disk (ACP has no listing in the client's file system).
"""

from __future__ import annotations

import fnmatch
import os
import stat
import threading
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
from acp_agent.tools.guard import authorize_read
from acp_agent.tools.ripgrep import SKIP_DIRS

NAME = "glob"
MAX_RESULTS = 200
MAX_SCANNED = 50_000
MAX_PATTERN_CHARS = 1000


class GlobArgs(msgspec.Struct, frozen=True):
    pattern: str
    path: str = "."


class Glob:
    name = NAME
    description = (
        "Find files by glob pattern (`**` spans directories: `src/**/test_*.py`). Paths, "
        f"newest first, at most {MAX_RESULTS}; what .gitignore/.ignore exclude, `.git` and "
        "`node_modules` are skipped."
    )
    kind = ToolKind.SEARCH
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "pattern": {"type": "string", "description": "glob pattern, e.g. `**/*.py`"},
            "path": {"type": "string", "description": "directory to search (default `.`)"},
        },
        "required": ["pattern"],
    }

    def title(self, arguments: dict[str, object]) -> str:
        pattern, path = string(arguments, "pattern"), string(arguments, "path")
        where = f" in {path}" if path and path != "." else ""
        return f"Find {pattern}{where}" if pattern is not None else "Find files"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return located(arguments, ctx, default=".")

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, GlobArgs, NAME)
        segments = pattern_segments(args.pattern)
        top = confine(args.path, ctx)
        await authorize_read(ctx, top)
        if not top.is_dir():
            raise ToolError(f"{NAME}: {top} is not a directory")
        roots = tuple(root.resolve() for root in ctx.all_roots())
        walk = _Walk(segments, top, ctx.cwd.resolve(), roots)
        rg = ripgrep.find_rg()
        if rg is not None:
            await walk.run_rg(rg)
        else:
            walk.unfiltered = True
            try:
                await anyio.to_thread.run_sync(walk.run, abandon_on_cancel=True)
            finally:
                walk.stop.set()
        return ToolOutput([TextContent(text=walk.report(args.pattern))])


def pattern_segments(pattern: str) -> list[str]:
    """The pattern's segments, consecutive ``**`` merged; ``ToolError`` for a pattern that is
    empty, too long, absolute or climbs out with ``..``."""
    if not pattern.strip():
        raise ToolError(f"{NAME}: the pattern is empty")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ToolError(f"{NAME}: the pattern is longer than {MAX_PATTERN_CHARS} characters")
    if pattern.startswith("/"):
        raise ToolError(f"{NAME}: the pattern must be relative; put the directory in `path`")
    segments: list[str] = []
    for segment in pattern.split("/"):
        if segment == "..":
            raise ToolError(f"{NAME}: `..` is not allowed in the pattern; use `path`")
        if segment in ("", ".") or (segment == "**" and segments[-1:] == ["**"]):
            continue
        segments.append(segment)
    if not segments:
        raise ToolError(f"{NAME}: the pattern {pattern!r} names no files")
    return segments


def matches(segments: list[str], parts: tuple[str, ...]) -> bool:
    """Whether the path ``parts`` matches the pattern ``segments`` (``**``: any number of
    parts, none included)."""
    if not segments:
        return not parts
    head, rest = segments[0], segments[1:]
    if head == "**":
        return any(matches(rest, parts[skip:]) for skip in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], head) and matches(rest, parts[1:])


class _Walk(msgspec.Struct):
    segments: list[str]
    top: Path
    cwd: Path
    roots: tuple[Path, ...]
    stop: threading.Event = msgspec.field(default_factory=threading.Event)
    found: list[tuple[float, str]] = msgspec.field(default_factory=list)
    scanned: int = 0
    stopped: str | None = None
    matched: list[Path] = msgspec.field(default_factory=list)
    unfiltered: bool = False
    """Walked in Python for want of rg: ignore files were not applied."""

    async def run_rg(self, rg: str) -> None:
        argv = [rg, "--files", "--hidden", "--null", "--sort", "path"]
        if "**" not in self.segments:
            argv += ["--max-depth", str(len(self.segments))]
        argv += [*ripgrep.walk_flags(self.top), "--", str(self.top)]
        await ripgrep.run_rg(argv, self.top, self._listed, separator=b"\0")
        matched, self.matched = self.matched, []
        await anyio.to_thread.run_sync(self._add_all, matched)

    def _listed(self, record: bytes) -> bool:
        """One path rg listed; whether to read on."""
        path = Path(os.fsdecode(record))
        if not path.is_relative_to(self.top):
            return True
        self.scanned += 1
        if self.scanned > MAX_SCANNED:
            self.stopped = f"stopped after scanning {MAX_SCANNED} entries"
            return False
        if matches(self.segments, path.relative_to(self.top).parts):
            self.matched.append(path)  # stat-ed in a worker thread, once rg is done
        return True

    def run(self) -> None:
        depth = None if "**" in self.segments else len(self.segments)
        for directory, dirs, names in os.walk(self.top):
            here = Path(directory).relative_to(self.top).parts
            if depth is not None and len(here) + 1 >= depth:
                dirs[:] = []  # deeper files cannot match
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                if self.stop.is_set():
                    return
                self.scanned += 1
                if self.scanned > MAX_SCANNED:
                    self.stopped = f"stopped after scanning {MAX_SCANNED} entries"
                    return
                if matches(self.segments, (*here, name)):
                    self._add(Path(directory, name))

    def _add_all(self, paths: list[Path]) -> None:
        for path in paths:
            self._add(path)

    def _add(self, path: Path) -> None:
        """A file whose name matched: kept if it is a file (a link's target too) inside the
        roots."""
        try:
            real = path.resolve()
            info = os.stat(real)
        except (OSError, RuntimeError):
            return
        if not stat.S_ISREG(info.st_mode) or not any(real.is_relative_to(r) for r in self.roots):
            return
        self.found.append((info.st_mtime, self._shown(path)))

    def _shown(self, path: Path) -> str:
        return str(path.relative_to(self.cwd)) if path.is_relative_to(self.cwd) else str(path)

    def report(self, pattern: str) -> str:
        unfiltered = [ripgrep.NOT_FILTERED] if self.unfiltered else []
        if not self.found:
            hint = "" if "/" in pattern else f" (for every depth, try **/{pattern})"
            why = [self.stopped] if self.stopped else []
            shown_notes = "".join(f" [{note}]" for note in [*why, *unfiltered])
            return f"no files match {pattern!r} in {self.top}{hint}{shown_notes}"
        ordered = sorted(self.found, key=lambda item: (-item[0], item[1]))
        lines = [shown_path for _, shown_path in ordered[:MAX_RESULTS]]
        notes: list[str] = []
        if len(ordered) > MAX_RESULTS:
            notes.append(f"{len(ordered) - MAX_RESULTS} more files match; narrow the pattern")
        if self.stopped:
            notes.append(f"{self.stopped}; narrow `path` for more")
        notes += unfiltered
        return "\n".join([*lines, *(f"[{n}]" for n in notes)])
