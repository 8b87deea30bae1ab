"""File tools meet what is not a regular file: a named pipe, a socket, a device (issue 14).

Opening a FIFO blocks until its other side opens, in a worker thread nothing can cancel; a
device such as ``/dev/zero`` never ends; a socket cannot be opened at all. So ``read_file``,
``write_file`` and ``edit_file`` refuse them with an error result naming the kind, ``search``
refuses one named as its path and skips them while walking, ``list_dir`` lists them by kind,
and a client is not asked to read one. Each test runs under an ``Unblocker`` so a tool that
does block comes back (and the test fails) instead of hanging.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import pytest

from acp_agent.content import TextContent
from acp_agent.tools.base import Tool, ToolContext, ToolError, ToolOutput
from acp_agent.tools.edit_file import EditFile
from acp_agent.tools.list_dir import ListDir
from acp_agent.tools.read_file import ReadFile
from acp_agent.tools.search import Search
from acp_agent.tools.write_file import WriteFile
from tests.tools.special import DEVICE_ROOT, KINDS, Unblocker, make_special, refusal
from tests.tools.support import context

TOOLS: dict[str, tuple[Tool, dict[str, object]]] = {
    "read_file": (ReadFile(), {}),
    "write_file": (WriteFile(), {"content": "new\n"}),
    "edit_file": (EditFile(), {"old_string": "a", "new_string": "b"}),
    "search": (Search(), {"pattern": "a"}),
}


def text(output: ToolOutput) -> str:
    assert len(output.content) == 1 and isinstance(output.content[0], TextContent)
    return output.content[0].text


def device_context(workspace: Path) -> ToolContext:
    return context(workspace, roots=(DEVICE_ROOT,))


class RecordingFs:
    """A client file system that answers every read, recording the paths it was asked for."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        self.asked.append(path)
        return "a client's buffer\n"


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", TOOLS)
async def test_file_tools_refuse_what_is_not_a_regular_file(
    workspace: Path, name: str, kind: str
) -> None:
    tool, extra = TOOLS[name]
    target = workspace / "notes"
    make_special(target, kind)
    with Unblocker(target) as unblocker, pytest.raises(ToolError, match=refusal(kind)):
        await tool.run({"path": "notes", **extra}, device_context(workspace))
    assert unblocker.fired == 0, f"{name} blocked on the named pipe"
    assert target.is_symlink() or not stat.S_ISREG(os.lstat(target).st_mode), "left as it was"


@pytest.mark.parametrize("name", ["read_file", "write_file", "edit_file"])
async def test_a_link_to_a_device_outside_the_roots_is_refused_by_confine(
    workspace: Path, name: str
) -> None:
    tool, extra = TOOLS[name]
    make_special(workspace / "notes", "device", "/dev/zero")
    with pytest.raises(ToolError, match="outside the session roots"):
        await tool.run({"path": "notes", **extra}, context(workspace))


async def test_a_device_that_never_ends_is_refused_not_read(workspace: Path) -> None:
    make_special(workspace / "zero", "device", "/dev/zero")
    with pytest.raises(ToolError, match=f"/dev/zero {refusal('device')}"):
        await ReadFile().run({"path": "zero"}, device_context(workspace))


@pytest.mark.parametrize("name", ["read_file", "write_file", "edit_file"])
async def test_the_client_is_not_asked_to_read_a_named_pipe(workspace: Path, name: str) -> None:
    tool, extra = TOOLS[name]
    make_special(workspace / "notes", "fifo")
    fs = RecordingFs()
    ctx = ToolContext("s1", workspace, fs=fs, permissions=context(workspace).permissions)
    with (
        Unblocker(workspace / "notes") as unblocker,
        pytest.raises(ToolError, match=refusal("fifo")),
    ):
        await tool.run({"path": "notes", **extra}, ctx)
    assert (fs.asked, unblocker.fired) == ([], 0)


@pytest.mark.parametrize("name", ["read_file", "write_file", "edit_file", "search"])
async def test_the_opened_file_decides_not_a_stat_before_it(
    workspace: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name can change between a check and the open: a regular file when looked at, a
    named pipe when opened. The opened descriptor's own ``fstat`` is what counts."""
    tool, extra = TOOLS[name]
    (workspace / "regular").write_text("a\n", encoding="utf-8")
    fifo = workspace / "notes"
    make_special(fifo, "fifo")
    looks_regular = os.stat(workspace / "regular")
    real_stat = os.stat

    def lying_stat(path: str | os.PathLike[str], *args: Any, **kwargs: Any) -> os.stat_result:
        if os.fspath(path) == os.fspath(fifo):
            return looks_regular
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", lying_stat)
    with Unblocker(fifo) as unblocker, pytest.raises(ToolError, match=refusal("fifo")):
        await tool.run({"path": "notes", **extra}, context(workspace))
    assert unblocker.fired == 0, f"{name} opened the named pipe in a blocking way"


async def test_search_walks_past_non_regular_files(workspace: Path) -> None:
    (workspace / "a.txt").write_text("a match\n", encoding="utf-8")
    for kind in KINDS:
        make_special(workspace / f"{kind}.txt", kind)
    with Unblocker(workspace / "fifo.txt") as unblocker:
        found = text(await Search().run({"pattern": "a"}, device_context(workspace)))
    assert (found, unblocker.fired) == ("a.txt:1: a match", 0)


async def test_list_dir_names_the_kind_of_each_entry(workspace: Path) -> None:
    (workspace / "a.txt").write_text("", encoding="utf-8")
    (workspace / "dir").mkdir()
    for kind in KINDS:
        make_special(workspace / kind, kind)
    listing = text(await ListDir().run({}, device_context(workspace)))
    assert listing.split("\n") == [
        "a.txt",
        "device -> /dev/null",
        "dir/",
        "fifo (named pipe)",
        "socket (socket)",
    ]


async def test_list_dir_on_a_named_pipe_says_it_is_not_a_directory(workspace: Path) -> None:
    make_special(workspace / "notes", "fifo")
    with Unblocker(workspace / "notes") as unblocker, pytest.raises(ToolError, match="named pipe"):
        await ListDir().run({"path": "notes"}, context(workspace))
    assert unblocker.fired == 0
