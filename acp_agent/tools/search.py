"""``search {pattern, path?, glob?, ignore_case?, max_results?}``: a regex over workspace files.

Walks ``path`` (default the cwd; inside the session roots) with ripgrep (``ripgrep.py``), as a
user's own ``rg`` would: files ignored by ``.gitignore``, ``.ignore`` or ``.git/info/exclude``
are skipped, and so are hidden files and directories (names starting with a dot: name one as
``path`` to search it), binary files, files over ``MAX_FILE_BYTES``, directory and file links
(never followed), whatever is not a regular file, and the version-control and tool caches
``ripgrep.SKIP_DIRS`` even when nothing ignores them. Files are searched in sorted path order,
so the first matches are always the same ones. Each match is one line ``path:line: text``
(path relative to the cwd when it is inside it), a line clipped at ``MAX_LINE_CHARS``. Output
is bounded: at most ``max_results`` matches (default 100, at most 500) and
``MAX_OUTPUT_CHARS`` characters, and the result says when it stopped early. rg runs on all
cores and its matches are sorted here; a search with more matches than a few results' worth
runs again with rg's own ``--sort path`` (one thread), killed once the bounds are reached.

The pattern is checked with Python ``re`` first (a bad one is refused as before). rg's regex
dialect is Rust's, which lacks look-around and back-references; for such a pattern rg only
lists the files (the same walk) and Python ``re`` searches them, at most ``MAX_FILES``. Where
no ``rg`` exists, the Python walker does everything as it did before ripgrep: sorted
``os.walk``, ``SKIP_DIRS`` skipped, at most ``MAX_FILES`` files, a NUL byte in the first 8 KiB
meaning binary, and the result ends with ``ripgrep.NOT_FILTERED``. A ``path`` naming one file
is searched in Python too (it must be a regular file: files are opened only through
``files.open_regular``, which never blocks). Reads the local disk (ACP has no search in the
client's file system).
"""

from __future__ import annotations

import fnmatch
import os
import re
import threading
from collections.abc import Callable, Iterable, Iterator
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
from acp_agent.tools.files import open_regular
from acp_agent.tools.guard import authorize_read, withheld_reads
from acp_agent.tools.ripgrep import SKIP_DIRS

NAME = "search"
DEFAULT_RESULTS = 100
MAX_RESULTS = 500
MAX_FILES = 20_000
MAX_FILE_BYTES = 2 << 20
MAX_LINE_CHARS = 300
MAX_OUTPUT_CHARS = 64 << 10
_UNSORTED_RECORDS = 4 * MAX_RESULTS
"""How many matches the unsorted first run keeps before it gives way to a sorted one."""
_RG_COLUMNS = 2000  # rg prints at most this many bytes of a line; more than MAX_LINE_CHARS shows
_RG_DIALECT = (b"regex parse error", b"not allowed in a regex")


class SearchArgs(msgspec.Struct, frozen=True):
    pattern: str
    path: str = "."
    glob: str | None = None
    ignore_case: bool = False
    max_results: int = DEFAULT_RESULTS


class Search:
    name = NAME
    description = (
        "Search file contents with a regular expression under `path` (default the working "
        "directory), skipping what .gitignore/.ignore exclude, hidden and binary files. "
        "`glob` filters file names (e.g. `*.py`). Returns `path:line: text` lines, bounded."
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
        rg = ripgrep.find_rg()
        if rg is not None and walk.top.is_dir():
            await _RgSearch(walk, rg, args).run()
        else:
            walk.unfiltered = rg is None and walk.top.is_dir()
            await _in_thread(walk, walk.run)
        return ToolOutput([TextContent(text=walk.report(args.pattern))])


async def _in_thread(walk: _Walk, work: Callable[[], None]) -> None:
    try:
        await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
    finally:
        walk.stop.set()


class _RgSearch(msgspec.Struct):
    """The walk and the search by rg; or, for a pattern outside rg's dialect, the walk by rg
    (``--files``) and the search by ``_Walk`` in Python."""

    walk: _Walk
    rg: str
    args: SearchArgs

    async def run(self) -> None:
        """On all cores first, unsorted, keeping at most ``_UNSORTED_RECORDS`` records: when rg
        ends within that, they are put in sorted path order here (rg's ``--sort path`` runs on
        one thread: 0.14-0.21 s against 0.08-0.10 s over 100,000 files on two cores). Past it,
        what was kept is dropped and rg runs again sorted, stopped at the result's bounds.
        The unsorted run leaves ``MAX_FILE_BYTES`` to ``_small_enough``, for the files that
        matched: rg's ``--max-filesize`` is a ``stat`` of every file it walks (about 15 % of
        that search)."""
        records: list[bytes] = []

        def keep(record: bytes) -> bool:
            records.append(record)
            return len(records) <= _UNSORTED_RECORDS

        ran = await ripgrep.run_rg(self._search_argv(sort=False), self.walk.top, keep)
        if ran.code is not None:  # rg ended: every match is in ``records``
            records.sort(key=_tree_order)
            small = _small_enough()
            for record in filter(small, records):
                if not self._match(record):
                    break
        else:
            ran = await ripgrep.run_rg(self._search_argv(sort=True), self.walk.top, self._match)
        if ran.code == 2 and not self.walk.lines and any(w in ran.stderr for w in _RG_DIALECT):
            await self._python_regex()
        elif ran.code == 2 and not self.walk.lines:
            self.walk.trouble = ran.stderr.decode("utf-8", "replace").strip().split("\n")[0]

    def _search_argv(self, *, sort: bool) -> list[str]:
        argv = [*self._walk_argv(sort=sort), "--null", "--line-number", "--with-filename"]
        argv += ["--no-heading", "--max-columns", str(_RG_COLUMNS), "--max-columns-preview"]
        argv += ["--ignore-case"] if self.args.ignore_case else ["--case-sensitive"]
        return [*argv, "--regexp", self.args.pattern, "--", str(self.walk.top)]

    def _walk_argv(self, *, sort: bool = True) -> list[str]:
        sorted_and_bounded = ("--sort", "path", "--max-filesize", str(MAX_FILE_BYTES))
        argv = [self.rg, *(sorted_and_bounded if sort else ())]
        if self.args.glob is not None:
            argv += ["--glob", self.args.glob]
        return argv + ripgrep.walk_flags(self.walk.top)

    def _match(self, record: bytes) -> bool:
        """One ``path\0line:text`` record; whether to read on."""
        path, nul, rest = record.partition(b"\0")
        number, colon, line = rest.partition(b":")
        shown = os.fsdecode(path)
        if nul and colon and number.isdigit() and os.path.isabs(shown) and self._shown(shown):
            text = line.decode("utf-8", "replace").rstrip("\r")
            self.walk.add(f"{self.walk.shown(Path(shown))}:{int(number)}: {_clip(text)}")
        return self.walk.stopped is None

    def _shown(self, path: str) -> bool:
        """Not a file a ``deny`` or ``ask`` read rule withholds (``guard.withheld_reads``)."""
        withheld = self.walk.withheld
        return withheld is None or not withheld(Path(path).resolve())

    async def _python_regex(self) -> None:
        files: list[Path] = []

        def listed(record: bytes) -> bool:
            files.append(Path(os.fsdecode(record)))
            return len(files) <= MAX_FILES

        argv = [*self._walk_argv(), "--files", "--null", "--", str(self.walk.top)]
        await ripgrep.run_rg(argv, self.walk.top, listed, separator=b"\0")
        await _in_thread(self.walk, lambda: self.walk.search_files(files))


def _small_enough() -> Callable[[bytes], bool]:
    """Whether a record's file is at most ``MAX_FILE_BYTES`` (what ``--max-filesize`` keeps),
    each file looked at once."""
    sizes: dict[bytes, bool] = {}

    def small(record: bytes) -> bool:
        path = record.partition(b"\0")[0]
        if path not in sizes:
            try:
                sizes[path] = os.stat(path).st_size <= MAX_FILE_BYTES
            except OSError:
                sizes[path] = False
        return sizes[path]

    return small


def _tree_order(record: bytes) -> list[bytes]:
    """``--sort path``'s order: a depth-first walk with each directory's entries sorted by
    name, i.e. the path compared component by component (``a/x`` before ``a-b/y``). A file's
    matches stay in line order (the sort is stable; rg writes each file's matches together)."""
    return record.partition(b"\0")[0].split(b"/")


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
    unfiltered: bool = False
    """Walked in Python for want of rg: ignore files were not applied."""
    trouble: str | None = None
    """What rg said when it failed and found nothing."""

    def run(self) -> None:
        if not self.top.is_dir():
            self._search_named(self.top)
            return
        self.search_files(self._walked())

    def _walked(self) -> Iterator[Path]:
        for directory, dirs, names in os.walk(self.top):
            dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
            for name in sorted(names):
                if self.glob is None or fnmatch.fnmatch(name, self.glob):
                    yield Path(directory, name)

    def search_files(self, paths: Iterable[Path]) -> None:
        for path in paths:
            if self.stopped or self.stop.is_set():
                return
            self._search_file(path)

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
                self.add(f"{self.shown(path)}:{number}: {_clip(line.rstrip(chr(13)))}")
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

    def add(self, line: str) -> None:
        if self.chars + len(line) + 1 > MAX_OUTPUT_CHARS:
            self.stopped = f"output limit of {MAX_OUTPUT_CHARS} characters reached"
            return
        self.lines.append(line)
        self.chars += len(line) + 1
        if len(self.lines) >= self.max_results:
            self.stopped = f"showing the first {self.max_results} matches"

    def shown(self, path: Path) -> str:
        return str(path.relative_to(self.cwd)) if path.is_relative_to(self.cwd) else str(path)

    def report(self, pattern: str) -> str:
        notes = [f"[{ripgrep.NOT_FILTERED}]"] if self.unfiltered else []
        if self.trouble:
            notes.append(f"[{self.trouble}]")
        if not self.lines:
            return " ".join([f"no matches for /{pattern}/ in {self.top}", *notes])
        if self.stopped:
            notes.insert(0, f"[{self.stopped}; narrow the search for more]")
        return "\n".join([*self.lines, *notes])


def _clip(line: str) -> str:
    return line if len(line) <= MAX_LINE_CHARS else line[:MAX_LINE_CHARS] + "…"
