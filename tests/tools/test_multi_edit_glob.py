"""``multi_edit`` (all or nothing, one diff, one permission, one write) and ``glob`` (segment
matching, ``**``, newest first, bounded, inside the roots, skipping ``.git``), locally.

Expectations come from docs/tools.md (the ``multi_edit`` and ``glob`` paragraphs) and the
brief of issue 15 point 5."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.tools import glob_files
from acp_agent.tools.base import ToolError, ToolOutput
from acp_agent.tools.display import DiffView, view_of
from acp_agent.tools.glob_files import Glob, matches, pattern_segments
from acp_agent.tools.multi_edit import MultiEdit
from acp_agent.tools.permissions import Mode
from tests.tools.support import ScriptedAsker, context


def text(output: ToolOutput) -> str:
    assert len(output.content) == 1 and isinstance(output.content[0], TextContent)
    return output.content[0].text


def edit(old: str, new: str, replace_all: bool = False) -> dict[str, object]:
    return {"old_string": old, "new_string": new, "replace_all": replace_all}


# --- multi_edit --------------------------------------------------------------------------------


async def test_multi_edit_applies_every_edit_in_order_with_one_diff_and_one_question(
    workspace: Path,
) -> None:
    path = workspace / "a.py"
    path.write_text("x = 1\ny = 2\nz = x\n", encoding="utf-8")
    asker = ScriptedAsker(["allow_once"])
    edits = [edit("x = 1", "x = 10"), edit("x", "w", replace_all=True), edit("w = 10", "w = 11")]
    output = await MultiEdit().run(
        {"path": "a.py", "edits": edits}, context(workspace, Mode.ASK, asker)
    )
    new = "w = 11\ny = 2\nz = w\n"
    assert path.read_text(encoding="utf-8") == new, "later edits see the earlier ones' text"
    assert text(output) == f"Edited {path}: 3 edits, replaced 4 occurrences"
    diff = DiffView(str(path), new, "x = 1\ny = 2\nz = x\n")
    assert view_of(output.content[0]) == diff, "one diff of the whole file"
    (asked,) = asker.asked
    assert asked.preview == [diff]


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        ([edit("y = 2", "y = 3"), edit("nope", "x")], "edit 2 of 2: old_string was not found"),
        (
            [edit("x = 1", "q"), edit("x = 1", "r")],
            "edit 2 of 2: old_string was not found in a.py (after the edits before it)",
        ),
        ([edit("= ", "=")], "edit 1 of 1: old_string occurs 3 times"),
        ([edit("", "x")], "edit 1 of 1: old_string is empty"),
        ([edit("y", "y")], "edit 1 of 1: old_string and new_string are the same"),
        ([], "edits is empty"),
    ],
)
async def test_multi_edit_is_all_or_nothing(
    workspace: Path, edits: list[dict[str, object]], message: str
) -> None:
    path = workspace / "a.py"
    path.write_text("x = 1\ny = 2\nz = x\n", encoding="utf-8")
    asker = ScriptedAsker(["allow_once"])
    with pytest.raises(ToolError, match=message.replace("(", r"\(").replace(")", r"\)")):
        await MultiEdit().run({"path": "a.py", "edits": edits}, context(workspace, Mode.ASK, asker))
    assert path.read_text(encoding="utf-8") == "x = 1\ny = 2\nz = x\n"
    assert asker.asked == [], "nothing asked before every edit was checked"


async def test_multi_edit_refuses_bad_arguments_missing_files_and_paths_outside(
    workspace: Path,
) -> None:
    tool, ctx = MultiEdit(), context(workspace)
    with pytest.raises(ToolError, match="bad arguments"):
        await tool.run({"path": "a.py", "edits": [{"old_string": "x"}]}, ctx)
    with pytest.raises(ToolError, match="bad arguments"):
        await tool.run({"path": "a.py", "edits": "x"}, ctx)
    with pytest.raises(ToolError, match="no such file"):
        await tool.run({"path": "missing.py", "edits": [edit("a", "b")]}, ctx)
    with pytest.raises(ToolError, match="outside the session roots"):
        await tool.run({"path": "../x.py", "edits": [edit("a", "b")]}, ctx)
    too_many = [edit(f"{i}", f"{i}!") for i in range(101)]
    (workspace / "a.py").write_text("x", encoding="utf-8")
    with pytest.raises(ToolError, match="at most 100"):
        await tool.run({"path": "a.py", "edits": too_many}, ctx)


async def test_multi_edit_denied_or_refused_by_the_mode_writes_nothing(workspace: Path) -> None:
    path = workspace / "a.py"
    path.write_text("x = 1\n", encoding="utf-8")
    args: dict[str, object] = {"path": "a.py", "edits": [edit("1", "2")]}
    with pytest.raises(ToolError, match="the user rejected it"):
        await MultiEdit().run(args, context(workspace, Mode.ASK, ScriptedAsker(["reject_once"])))
    with pytest.raises(ToolError, match=r"plan mode: file edits are not allowed.*exit_plan_mode"):
        await MultiEdit().run(args, context(workspace, Mode.PLAN))
    assert path.read_text(encoding="utf-8") == "x = 1\n"


# --- glob --------------------------------------------------------------------------------------


def touch(path: Path, mtime: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x", encoding="utf-8")
    os.utime(path, (mtime, mtime))


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.py", "a.py", True),
        ("*.py", "src/a.py", False),
        ("**/*.py", "a.py", True),
        ("**/*.py", "src/deep/a.py", True),
        ("src/**/test_*.py", "src/test_a.py", True),
        ("src/**/test_*.py", "src/x/y/test_a.py", True),
        ("src/**/test_*.py", "lib/test_a.py", False),
        ("src/*.py", "src/x/a.py", False),
        ("?.md", "a.md", True),
        ("[ab].md", "c.md", False),
        ("*.PY", "a.py", False),
        ("**", "a/b/c", True),
    ],
)
def test_glob_matches_segment_by_segment(pattern: str, path: str, expected: bool) -> None:
    assert matches(pattern_segments(pattern), tuple(path.split("/"))) is expected


async def test_glob_answers_files_newest_first_and_skips_git(workspace: Path) -> None:
    touch(workspace / "old.py", 1_000)
    touch(workspace / "src" / "new.py", 3_000)
    touch(workspace / "src" / "mid.py", 2_000)
    touch(workspace / "src" / "same.py", 2_000)
    touch(workspace / "src" / "notes.txt", 4_000)
    touch(workspace / ".git" / "hooks" / "x.py", 5_000)
    (workspace / "pkg.py").mkdir()  # a directory is not a file
    output = await Glob().run({"pattern": "**/*.py"}, context(workspace))
    assert text(output) == "\n".join(["src/new.py", "src/mid.py", "src/same.py", "old.py"])
    in_src = await Glob().run({"pattern": "*.py", "path": "src"}, context(workspace))
    assert text(in_src).splitlines() == ["src/new.py", "src/mid.py", "src/same.py"]


async def test_glob_is_bounded_and_says_so(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(glob_files, "MAX_RESULTS", 3)
    for i in range(5):
        touch(workspace / f"f{i}.txt", 1_000 + i)
    lines = text(await Glob().run({"pattern": "*.txt"}, context(workspace))).splitlines()
    assert lines == ["f4.txt", "f3.txt", "f2.txt", "[2 more files match; narrow the pattern]"]
    monkeypatch.setattr(glob_files, "MAX_SCANNED", 2)
    scanned = text(await Glob().run({"pattern": "*.txt"}, context(workspace)))
    assert scanned.endswith("[stopped after scanning 2 entries; narrow `path` for more]")


async def test_glob_refuses_bad_patterns_and_paths_outside_the_roots(
    tmp_path: Path, workspace: Path
) -> None:
    ctx = context(workspace)
    for pattern, message in (
        ("", "empty"),
        ("/etc/*", "must be relative"),
        ("../*", "`..` is not allowed"),
        ("./", "names no files"),
    ):
        with pytest.raises(ToolError, match=message):
            await Glob().run({"pattern": pattern}, ctx)
    with pytest.raises(ToolError, match="outside the session roots"):
        await Glob().run({"pattern": "*", "path": ".."}, ctx)
    with pytest.raises(ToolError, match="bad arguments"):
        await Glob().run({"pattern": 3}, ctx)
    touch(workspace / "f.txt", 1)
    with pytest.raises(ToolError, match="not a directory"):
        await Glob().run({"pattern": "*", "path": "f.txt"}, ctx)
    outside = tmp_path / "secret.txt"
    outside.write_text("s", encoding="utf-8")
    (workspace / "link.txt").symlink_to(outside)
    nothing = text(await Glob().run({"pattern": "link.txt"}, ctx))
    assert nothing.startswith("no files match 'link.txt'"), "a link leaving the roots is skipped"
    hint = text(await Glob().run({"pattern": "*.rs"}, ctx))
    assert hint.endswith("(for every depth, try **/*.rs)")
