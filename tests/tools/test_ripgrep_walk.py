"""``search``, ``glob`` and ``list_dir`` walk with the real ``rg`` (the ``ripgrep`` wheel's):
``.gitignore``, ``.ignore`` and ``.git/info/exclude`` honoured (in a git repository and
outside one), hidden files skipped by ``search`` and listed by ``glob`` and ``list_dir``, binary
files skipped, a pattern outside rg's dialect searched by Python over rg's walk, long lines
bounded, rg killed when the call has enough or is cancelled; and without rg the Python walker,
which says ignore files were not applied. Expectations: docs/tools.md and contracts §14."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from acp_agent.content import TextContent
from acp_agent.tools import ripgrep, search as search_module
from acp_agent.tools.base import ToolOutput
from acp_agent.tools.glob_files import Glob
from acp_agent.tools.list_dir import ListDir
from acp_agent.tools.search import MAX_LINE_CHARS, Search
from tests.tools.support import context

pytestmark = pytest.mark.skipif(
    ripgrep.find_rg() is None, reason="no rg: install the ripgrep wheel (a dependency)"
)


def text(output: ToolOutput) -> str:
    assert len(output.content) == 1 and isinstance(output.content[0], TextContent)
    return output.content[0].text


def write(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")


@pytest.fixture(params=["git", "plain"])
def tree(request: pytest.FixtureRequest, workspace: Path) -> Iterator[Path]:
    """A workspace (a git repository, or a plain directory) whose ignore files leave out
    ``build/``, ``*.log``, ``notes.txt`` (``.ignore``) and, in git, ``local.txt``
    (``.git/info/exclude``)."""
    if request.param == "git":
        subprocess.run(["git", "init", "-q", str(workspace)], check=True)
        write(workspace / ".git" / "info" / "exclude", "local.txt\n")
        write(workspace / "local.txt", "needle local\n")
    write(workspace / ".gitignore", "build/\n*.log\n")
    write(workspace / ".ignore", "notes.txt\n")
    write(workspace / "src" / "main.py", "needle = 1\n")
    write(workspace / "src" / "deep" / "util.py", "x = 'needle'\n")
    write(workspace / "build" / "out.py", "needle built\n")
    write(workspace / "src" / "run.log", "needle logged\n")
    write(workspace / "notes.txt", "needle noted\n")
    write(workspace / ".hidden.py", "needle hidden\n")
    write(workspace / ".config" / "settings.py", "needle configured\n")
    write(workspace / "blob.bin", b"needle\0binary\n")
    write(workspace / "node_modules" / "dep" / "index.py", "needle dep\n")
    yield workspace


async def test_search_leaves_out_what_is_ignored_hidden_or_binary(tree: Path) -> None:
    found = text(await Search().run({"pattern": "needle"}, context(tree)))
    assert found == "src/deep/util.py:1: x = 'needle'\nsrc/main.py:1: needle = 1"


async def test_a_hidden_or_ignored_directory_named_as_path_is_searched(tree: Path) -> None:
    ctx = context(tree)
    hidden = text(await Search().run({"pattern": "needle", "path": ".config"}, ctx))
    assert hidden == ".config/settings.py:1: needle configured"
    built = text(await Search().run({"pattern": "needle", "path": "build"}, ctx))
    assert built == "build/out.py:1: needle built", "a path named outright is searched"


async def test_a_pattern_outside_rgs_dialect_is_searched_by_python_over_rgs_walk(
    tree: Path,
) -> None:
    found = text(await Search().run({"pattern": r"(?<=x = ')needle"}, context(tree)))
    assert found == "src/deep/util.py:1: x = 'needle'"
    backref = text(await Search().run({"pattern": r"(ne)e\w+ = (1)"}, context(tree)))
    assert backref == "src/main.py:1: needle = 1"


def rg_sorted(workspace: Path, pattern: str) -> list[str]:
    """What rg's own ``--sort path`` prints, in the search tool's ``path:line: text`` form."""
    rg = ripgrep.find_rg()
    assert rg is not None
    argv = [rg, "--no-config", "--sort", "path", "--line-number", "--no-heading", pattern, "."]
    out = subprocess.run(argv, cwd=workspace, capture_output=True, text=True, check=True).stdout
    return [re.sub(r"^\./(.*?):(\d+):", r"\1:\2: ", line) for line in out.splitlines()]


@pytest.mark.parametrize("kept", [search_module._UNSORTED_RECORDS, 3])
async def test_matches_come_in_rgs_sorted_path_order_from_either_run(
    workspace: Path, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # rg runs unsorted on all cores and the matches are sorted here; past ``kept`` matches it
    # runs again with --sort path. Either way the order is rg's --sort path (a directory's
    # entries by name, depth first: a/x before a-b/y, though "-" sorts before "/"), a file's
    # matches in line order, and the bound cuts the same first matches.
    monkeypatch.setattr(search_module, "_UNSORTED_RECORDS", kept)
    names = ["a/x.txt", "a-b/y.txt", "a.txt", "b/c/d.txt", "b/c.txt", "b0.txt", "B.txt", "é.txt"]
    for n, name in enumerate(reversed(names)):
        write(workspace / name, f"needle {n}\nplain\nneedle again {n}\n")
    wanted = rg_sorted(workspace, "needle")
    assert len(wanted) == 2 * len(names)
    found = text(await Search().run({"pattern": "needle"}, context(workspace)))
    assert found.splitlines() == wanted
    first = text(await Search().run({"pattern": "needle", "max_results": 5}, context(workspace)))
    assert first.splitlines()[:5] == wanted[:5] and "the first 5 matches" in first.splitlines()[-1]


@pytest.mark.parametrize("kept", [search_module._UNSORTED_RECORDS, 1])
async def test_a_file_over_the_size_bound_is_not_searched_by_either_run(
    workspace: Path, kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the sorted run leaves it to rg's --max-filesize, the unsorted one to a stat of each file
    # that matched; a file of exactly the bound is searched by both
    monkeypatch.setattr(search_module, "_UNSORTED_RECORDS", kept)
    bound = search_module.MAX_FILE_BYTES
    write(workspace / "big.txt", "needle big\n" + "x" * bound)
    line = "needle edge\n"
    write(workspace / "edge.txt", line + "y" * (bound - len(line)))
    write(workspace / "small.txt", "needle small\n")
    found = text(await Search().run({"pattern": "needle"}, context(workspace)))
    assert found.splitlines() == ["edge.txt:1: needle edge", "small.txt:1: needle small"]


async def test_glob_lists_hidden_files_but_not_ignored_ones(tree: Path) -> None:
    found = text(await Glob().run({"pattern": "**/*.py"}, context(tree))).splitlines()
    assert sorted(found) == [".config/settings.py", ".hidden.py", "src/deep/util.py", "src/main.py"]
    top = text(await Glob().run({"pattern": "*"}, context(tree))).splitlines()
    assert sorted(top) == [".gitignore", ".hidden.py", ".ignore", "blob.bin"]


async def test_list_dir_leaves_out_ignored_entries_and_counts_them(tree: Path) -> None:
    listing = text(await ListDir().run({}, context(tree))).splitlines()
    shown = [".config/", ".gitignore", ".hidden.py", ".ignore", "blob.bin", "node_modules/", "src/"]
    if (tree / ".git").is_dir():
        assert listing == [
            ".config/",
            ".git/",
            *shown[1:],
            "[3 ignored entries (.gitignore, .ignore) not shown]",
        ]
    else:
        assert listing == [*shown, "[2 ignored entries (.gitignore, .ignore) not shown]"]
    inner = text(await ListDir().run({"path": "src"}, context(tree))).splitlines()
    assert inner == ["deep/", "main.py", "[1 ignored entries (.gitignore, .ignore) not shown]"]


async def test_long_lines_are_clipped_however_long(workspace: Path) -> None:
    write(workspace / "min.js", "var needle='" + "x" * 200_000 + "';\n")
    found = text(await Search().run({"pattern": "needle"}, context(workspace)))
    assert found == "min.js:1: " + ("var needle='" + "x" * 200_000)[:MAX_LINE_CHARS] + "…"


async def test_rg_is_killed_once_the_matches_suffice(workspace: Path) -> None:
    write(workspace / "many.txt", "hit\n" * 100_000)
    seen: list[bytes] = []

    def take(record: bytes) -> bool:
        seen.append(record)
        return len(seen) < 3

    rg = ripgrep.find_rg()
    assert rg is not None
    ran = await ripgrep.run_rg([rg, "--no-config", "hit", "many.txt"], workspace, take)
    assert (ran.code, seen) == (None, [b"hit"] * 3)
    assert _rg_children() == []


async def test_a_cancelled_call_kills_rg(workspace: Path) -> None:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)  # rg reads a named pipe named on its command line: it blocks there
    rg = ripgrep.find_rg()
    assert rg is not None
    with anyio.move_on_after(30) as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(ripgrep.run_rg, [rg, "--no-config", "x", str(fifo)], workspace, bool)
            writer = await _open_once_read(fifo)  # kept open: rg waits for data, no EOF
            assert len(_rg_children()) == 1
            tg.cancel_scope.cancel()
    os.close(writer)
    assert not scope.cancelled_caught
    assert _rg_children() == [], "rg was killed and reaped"


async def _open_once_read(fifo: Path) -> int:
    """The FIFO's write end, opened once a reader has it open (until then, opening it without
    blocking fails)."""
    while True:
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            await anyio.sleep(0.01)


def _rg_children() -> list[int]:
    children = []
    for entry in os.listdir("/proc"):
        try:
            stat = Path("/proc", entry, "stat").read_text()
        except (OSError, ValueError):
            continue
        fields = stat.rpartition(")")[2].split()
        if "(rg)" in stat and int(fields[1]) == os.getpid() and fields[0] != "Z":
            children.append(int(entry))
    return children


async def test_without_rg_the_python_walker_says_ignore_files_were_not_applied(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ripgrep, "find_rg", lambda: None)
    write(workspace / ".gitignore", "build/\n")
    write(workspace / "src" / "a.py", "needle\n")
    write(workspace / "build" / "b.py", "needle\n")
    ctx = context(workspace)
    note = f"[{ripgrep.NOT_FILTERED}]"
    found = text(await Search().run({"pattern": "needle"}, ctx))
    assert found == f"build/b.py:1: needle\nsrc/a.py:1: needle\n{note}"
    none = text(await Search().run({"pattern": "zzz"}, ctx))
    assert none == f"no matches for /zzz/ in {workspace} {note}"
    globbed = text(await Glob().run({"pattern": "**/*.py"}, ctx)).splitlines()
    assert sorted(globbed[:-1]) == ["build/b.py", "src/a.py"] and globbed[-1] == note
    listing = text(await ListDir().run({}, ctx)).splitlines()
    assert listing == [".gitignore", "build/", "src/", note]
