"""The file tools on a temporary workspace, locally (no client): reading ranges, writing,
exact edits with diffs, listing, searching, and the session roots."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.tools.base import ShownRoots, ToolError, ToolOutput, shown
from acp_agent.tools.display import DiffView, view_of
from acp_agent.tools.edit_file import EditFile
from acp_agent.tools.list_dir import MAX_ENTRIES, ListDir
from acp_agent.tools.read_file import ReadFile
from acp_agent.tools.search import Search
from acp_agent.tools.write_file import WriteFile
from tests.tools.support import context


def text(output: ToolOutput) -> str:
    assert len(output.content) == 1 and isinstance(output.content[0], TextContent)
    return output.content[0].text


# --- read_file --------------------------------------------------------------------------------


async def test_read_file_reads_a_line_range(workspace: Path) -> None:
    (workspace / "f.txt").write_text("one\ntwo\nthree\nfour\n", encoding="utf-8")
    ctx, tool = context(workspace), ReadFile()
    assert text(await tool.run({"path": "f.txt", "line": 2, "limit": 2}, ctx)) == "two\nthree\n"
    assert text(await tool.run({"path": "f.txt", "line": 4}, ctx)) == "four\n"
    assert text(await tool.run({"path": "f.txt", "limit": 1}, ctx)) == "one\n"
    assert text(await tool.run({"path": "f.txt"}, ctx)) == "one\ntwo\nthree\nfour\n"
    assert tool.title({"path": "f.txt", "line": 2, "limit": 2}) == "Read f.txt (lines 2-3)"
    assert [(loc.path, loc.line) for loc in tool.locations({"path": "f.txt", "line": 2}, ctx)] == [
        (str(workspace / "f.txt"), 2)
    ]


async def test_read_file_refuses_a_bad_range(workspace: Path) -> None:
    with pytest.raises(ToolError, match="bad arguments"):
        await ReadFile().run({"path": "f.txt", "line": 0}, context(workspace))


# --- write_file -------------------------------------------------------------------------------


async def test_write_file_creates_a_file_and_its_directories(workspace: Path) -> None:
    output = await WriteFile().run(
        {"path": "new/dir/a.txt", "content": "hello\r\nworld"}, context(workspace)
    )
    target = workspace / "new" / "dir" / "a.txt"
    assert target.read_bytes() == b"hello\r\nworld", "written byte-exact, no newline translation"
    assert not output.is_error
    assert text(output) == f"Created {target} (2 lines)"
    assert view_of(output.content[0]) == DiffView(str(target), "hello\r\nworld", None)


async def test_write_file_replaces_a_file_and_shows_the_old_text(workspace: Path) -> None:
    (workspace / "a.txt").write_text("old\n", encoding="utf-8")
    output = await WriteFile().run({"path": "a.txt", "content": "new\n"}, context(workspace))
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "new\n"
    assert view_of(output.content[0]) == DiffView(str(workspace / "a.txt"), "new\n", "old\n")


# --- edit_file --------------------------------------------------------------------------------


async def test_edit_file_replaces_exact_text_and_reports_a_diff(workspace: Path) -> None:
    path = workspace / "m.py"
    path.write_text("def f():\n    return 1\n", encoding="utf-8")
    args: dict[str, object] = {"path": "m.py", "old_string": "return 1", "new_string": "return 2"}
    output = await EditFile().run(args, context(workspace))
    assert path.read_text(encoding="utf-8") == "def f():\n    return 2\n"
    assert text(output) == f"Edited {path}: replaced 1 occurrence"
    assert view_of(output.content[0]) == DiffView(str(path), "return 2", "return 1")


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ({"old_string": "x = 1", "new_string": "x = 3"}, "occurs 2 times"),
        ({"old_string": "y = 1", "new_string": "y = 2"}, "was not found"),
        ({"old_string": "x  = 1", "new_string": "x = 2"}, "was not found"),
        ({"old_string": "", "new_string": "x"}, "old_string is empty"),
        ({"old_string": "x = 1", "new_string": "x = 1"}, "are the same"),
    ],
)
async def test_edit_file_refuses_ambiguous_or_missing_text(
    workspace: Path, args: dict[str, object], error: str
) -> None:
    path = workspace / "m.py"
    path.write_text("x = 1\nx = 1\n", encoding="utf-8")
    with pytest.raises(ToolError, match=error):
        await EditFile().run({"path": "m.py", **args}, context(workspace))
    assert path.read_text(encoding="utf-8") == "x = 1\nx = 1\n"


async def test_edit_file_replace_all(workspace: Path) -> None:
    path = workspace / "m.py"
    path.write_text("x = 1\nx = 1\n", encoding="utf-8")
    args: dict[str, object] = {
        "path": "m.py",
        "old_string": "x = 1",
        "new_string": "x = 2",
        "replace_all": True,
    }
    output = await EditFile().run(args, context(workspace))
    assert path.read_text(encoding="utf-8") == "x = 2\nx = 2\n"
    assert text(output).endswith("replaced 2 occurrences")


async def test_edit_file_needs_an_existing_file(workspace: Path) -> None:
    args: dict[str, object] = {"path": "nope.py", "old_string": "a", "new_string": "b"}
    with pytest.raises(ToolError, match="no such file"):
        await EditFile().run(args, context(workspace))
    assert not (workspace / "nope.py").exists()


# --- list_dir and search ------------------------------------------------------------------------


async def test_list_dir_marks_directories_and_links(workspace: Path) -> None:
    (workspace / "b.txt").write_text("", encoding="utf-8")
    (workspace / "a").mkdir()
    (workspace / "link").symlink_to("b.txt")
    output = await ListDir().run({}, context(workspace))
    assert text(output) == "a/\nb.txt\nlink -> b.txt"
    assert ListDir().title({}) == "List ."


async def test_list_dir_is_bounded(workspace: Path) -> None:
    for n in range(MAX_ENTRIES + 5):
        (workspace / f"f{n:05d}").touch()
    lines = text(await ListDir().run({"path": "."}, context(workspace))).split("\n")
    assert len(lines) == MAX_ENTRIES + 1 and lines[-1] == "[5 more entries not shown]"


async def test_search_finds_regex_matches_and_skips_caches(workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "a.py").write_text("import os\ndef main():\n    pass\n", encoding="utf-8")
    (workspace / "src" / "b.txt").write_text("def not_python\n", encoding="utf-8")
    (workspace / ".git").mkdir()
    (workspace / ".git" / "x.py").write_text("def hidden\n", encoding="utf-8")
    (workspace / "bin.dat").write_bytes(b"def \0 binary")
    ctx = context(workspace)
    found = text(await Search().run({"pattern": r"^def \w+"}, ctx))
    assert found == "src/a.py:2: def main():\nsrc/b.txt:1: def not_python"
    only_py = text(await Search().run({"pattern": "DEF", "glob": "*.py", "ignore_case": True}, ctx))
    assert only_py == "src/a.py:2: def main():"
    none = text(await Search().run({"pattern": "zzz", "path": "src"}, ctx))
    assert none.startswith("no matches for /zzz/")


async def test_search_output_is_bounded(workspace: Path) -> None:
    (workspace / "big.txt").write_text("hit\n" * 1000, encoding="utf-8")
    output = text(await Search().run({"pattern": "hit", "max_results": 3}, context(workspace)))
    assert output.split("\n") == [
        "big.txt:1: hit",
        "big.txt:2: hit",
        "big.txt:3: hit",
        "[showing the first 3 matches; narrow the search for more]",
    ]
    default = text(await Search().run({"pattern": "hit"}, context(workspace)))
    assert len(default.split("\n")) == 101


async def test_search_refuses_a_bad_pattern(workspace: Path) -> None:
    with pytest.raises(ToolError, match="bad pattern"):
        await Search().run({"pattern": "("}, context(workspace))


# --- roots --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        (ReadFile(), {"path": "../secret.txt"}),
        (WriteFile(), {"path": "../secret.txt", "content": "x"}),
        (EditFile(), {"path": "../secret.txt", "old_string": "top", "new_string": "x"}),
        (ListDir(), {"path": ".."}),
        (Search(), {"pattern": "top", "path": ".."}),
        (ReadFile(), {"path": "escape/secret.txt"}),
        (EditFile(), {"path": "escape/secret.txt", "old_string": "top", "new_string": "x"}),
    ],
)
async def test_paths_outside_the_roots_are_refused(
    tmp_path: Path, workspace: Path, tool: object, args: dict[str, object]
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret", encoding="utf-8")
    (workspace / "escape").symlink_to(tmp_path)
    with pytest.raises(ToolError, match="outside the session roots"):
        await tool.run(args, context(workspace))  # type: ignore[attr-defined]
    assert secret.read_text(encoding="utf-8") == "top secret"


async def test_search_does_not_follow_links_out_of_the_roots(
    tmp_path: Path, workspace: Path
) -> None:
    (tmp_path / "secret.txt").write_text("top secret", encoding="utf-8")
    (workspace / "leak.txt").symlink_to(tmp_path / "secret.txt")
    output = text(await Search().run({"pattern": "secret"}, context(workspace)))
    assert output.startswith("no matches")


async def test_additional_roots_are_inside(tmp_path: Path, workspace: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    ctx = context(workspace, roots=(extra,))
    await WriteFile().run({"path": str(extra / "x.txt"), "content": "ok"}, ctx)
    assert (extra / "x.txt").read_text(encoding="utf-8") == "ok"
    listing = text(await ListDir().run({"path": os.fspath(extra)}, ctx))
    assert listing == "x.txt"


# --- shown locations ----------------------------------------------------------------------------


def test_locations_are_normalized_lexically_and_never_leave_the_roots(
    workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = tmp_path / "extra"
    ctx = context(workspace, roots=(extra,))
    tool = ReadFile()

    def where(path: str) -> list[str]:
        return [loc.path for loc in tool.locations({"path": path}, ctx)]

    def no_file_system(*_: object) -> None:
        raise AssertionError("showing a location touched the file system")

    monkeypatch.setattr(os, "lstat", no_file_system)
    monkeypatch.setattr(os, "stat", no_file_system)
    assert where("missing/../f.txt") == [str(workspace / "f.txt")]  # need not exist
    assert where(str(extra / "x" / ".." / "y.txt")) == [str(extra / "y.txt")]
    assert where(".") == [str(workspace)]
    assert where("../outside.txt") == []
    assert where(str(workspace) + "-sibling/f.txt") == []  # a prefix is not a parent
    assert where("/etc/passwd") == []


# ``shown`` joins with ``ShownRoots.join`` instead of ``os.path.join`` (cheaper per call): the
# two must agree on every kind of name (POSIX ``posixpath.join``: an absolute name replaces the
# cwd, a cwd ending in the separator gets no second one).
@pytest.mark.parametrize("cwd", ["/w", "/w/", "/", "/a/b/../c", "rel", ""])
@pytest.mark.parametrize(
    "name", ["f.txt", "a/b.py", "/etc/passwd", "./x", "../y", "", ".", "//twice", "a//b", "~/h"]
)
def test_shown_joins_as_os_path_join(cwd: str, name: str) -> None:
    assert ShownRoots.of(Path(cwd), ()).join(name) == os.path.join(Path(cwd), name)


def test_shown_follows_the_context_s_roots_and_cwd(workspace: Path, tmp_path: Path) -> None:
    """The roots ``shown`` compares are derived once per context; a context with other roots
    or another cwd (``dataclasses.replace``, as ``ToolRunner.set_roots`` does) shows by its
    own."""
    extra = tmp_path / "extra"
    ctx = context(workspace)
    target = str(extra / "y.txt")
    assert shown(target, ctx) is None
    wider = replace(ctx, roots=(extra,))
    assert shown(target, wider) == target
    assert shown(target, ctx) is None  # the first context's view is unchanged
    moved = replace(ctx, cwd=extra)
    assert shown("y.txt", moved) == target
    assert shown("y.txt", ctx) == str(workspace / "y.txt")
