"""Every tool result is bounded (issue 14): a 30 MB file used to become one 31 MB result, frame,
journal line and model request.

``read_file`` shows at most ``MAX_LINES`` lines and ``MAX_BYTES`` of text, a line clipped at
``MAX_LINE_BYTES``, and ends a cut result with a note saying how to read on (its ``line`` and
``limit`` page through the file), the same through the client. ``list_dir`` is bounded in
characters as well as entries; ``run_command`` echoes a long command clipped; ``write_file`` and
``edit_file`` leave a big diff out.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.tools.base import ToolContext, ToolError, ToolOutput
from acp_agent.tools.display import view_of
from acp_agent.tools.list_dir import MAX_OUTPUT_CHARS as LIST_CHARS, ListDir
from acp_agent.tools.read_file import MAX_BYTES, MAX_LINE_BYTES, MAX_LINES, ReadFile
from acp_agent.tools.run_command import OUTPUT_LIMIT, RunCommand
from acp_agent.tools.write_file import WriteFile
from tests.tools.support import context


def text(output: ToolOutput) -> str:
    assert len(output.content) == 1 and isinstance(output.content[0], TextContent)
    return output.content[0].text


def numbered(count: int, width: int = 0) -> str:
    return "".join(f"line {n}".ljust(width) + "\n" for n in range(1, count + 1))


async def read(workspace: Path, **arguments: object) -> str:
    return text(await ReadFile().run({"path": "f.txt", **arguments}, context(workspace)))


def note(more: str, line: int) -> str:
    return f"[… file continues: {more}; call read_file with line={line} to read on]"


class WholeFileFs:
    """A client that answers every read with ``body`` (from ``line``, ``limit`` lines)."""

    def __init__(self, body: str) -> None:
        self.body = body
        self.asked: list[tuple[int | None, int | None]] = []

    async def read_text_file(
        self, path: str, line: int | None = None, limit: int | None = None
    ) -> str:
        self.asked.append((line, limit))
        lines = self.body.splitlines(keepends=True)
        start = (line or 1) - 1
        return "".join(lines[start : start + limit if limit else None])


# --- read_file ----------------------------------------------------------------------------------


async def test_a_long_file_is_cut_at_max_lines_with_a_note(workspace: Path) -> None:
    (workspace / "f.txt").write_text(numbered(50_211), encoding="utf-8")
    body = await read(workspace)
    assert body == numbered(MAX_LINES) + note("48,211 more lines", MAX_LINES + 1)


async def test_line_and_limit_page_through_the_rest(workspace: Path) -> None:
    (workspace / "f.txt").write_text(numbered(4500), encoding="utf-8")
    second = await read(workspace, line=2001)
    assert second.startswith("line 2001\n") and second.endswith(note("500 more lines", 4001))
    assert (await read(workspace, line=4001)).split("\n")[-2:] == ["line 4500", ""]
    asked_for_more = await read(workspace, line=1, limit=5000)
    assert asked_for_more.endswith(note("2,500 more lines", 2001)), "the cap holds over limit"
    assert await read(workspace, line=10, limit=2) == "line 10\nline 11\n", "asked for, no note"


async def test_a_file_is_cut_at_max_bytes_on_a_line_boundary(workspace: Path) -> None:
    (workspace / "f.txt").write_text(numbered(1000, width=199), encoding="utf-8")  # 200 B/line
    body = await read(workspace)
    shown = MAX_BYTES // 200
    assert body == numbered(shown, width=199) + note(f"{1000 - shown} more lines", shown + 1)
    assert len(body.encode()) <= MAX_BYTES + 200


async def test_an_overlong_line_is_clipped(workspace: Path) -> None:
    (workspace / "f.txt").write_text("é" * 1_000_000 + "\nnext\n", encoding="utf-8")
    first, second, end = (await read(workspace)).split("\n")
    kept = MAX_LINE_BYTES // 2  # two bytes each
    assert first == "é" * kept + f"… [line clipped: {2_000_000 - 2 * kept:,} more bytes]"
    assert (second, end) == ("next", "")


async def test_a_line_past_the_end_says_how_long_the_file_is(workspace: Path) -> None:
    (workspace / "f.txt").write_text("one\ntwo", encoding="utf-8")
    assert await read(workspace, line=5) == "[line 5 is past the end of the file: it has 2 lines]"
    assert await read(workspace, line=2) == "two"


async def test_a_file_that_is_not_utf8_is_still_refused(workspace: Path) -> None:
    (workspace / "f.txt").write_bytes(b"ok\n\xff\xfe\n")
    with pytest.raises(ToolError, match="not UTF-8"):
        await read(workspace)


async def test_what_the_client_answers_is_bounded_too(workspace: Path) -> None:
    fs = WholeFileFs(numbered(300_000))
    ctx = ToolContext("s1", workspace, fs=fs)
    body = text(await ReadFile().run({"path": "f.txt"}, ctx))
    assert body == numbered(MAX_LINES) + note(f"{300_000 - MAX_LINES:,} more lines", 2001)
    paged = text(await ReadFile().run({"path": "f.txt", "line": 7, "limit": 9000}, ctx))
    assert paged.startswith("line 7\n")
    assert paged.endswith(
        f"line {MAX_LINES + 6}\n[… file continues; call read_file with line={MAX_LINES + 7} "
        "to read on]"
    )
    assert fs.asked == [(None, None), (7, MAX_LINES + 1)]


# --- the other tools ----------------------------------------------------------------------------


async def test_list_dir_is_bounded_in_characters(workspace: Path) -> None:
    for n in range(900):
        (workspace / f"link{n:03d}").symlink_to("t" * 4000)
    listing = text(await ListDir().run({}, context(workspace)))
    assert len(listing) <= LIST_CHARS + 200
    assert listing.endswith("more entries not shown]")
    assert listing.startswith("link000 -> " + "t" * 300 + "…\n")


async def test_run_command_echoes_a_long_command_clipped(workspace: Path) -> None:
    command = "true " + "x" * 100_000
    output = text(await RunCommand().run({"command": command}, context(workspace)))
    assert output.endswith("[exit code 0]")
    assert len(output) < OUTPUT_LIMIT, len(output)


async def test_write_file_leaves_a_big_diff_out(workspace: Path) -> None:
    output = await WriteFile().run(
        {"path": "big.txt", "content": "x" * (1 << 20)}, context(workspace)
    )
    assert text(output) == f"Created {workspace / 'big.txt'} (1 lines)"
    assert view_of(output.content[0]) is None


async def test_list_dir_of_100k_entries_shows_the_first_1000_and_counts_the_rest(
    workspace: Path,
) -> None:
    for n in range(100_000):
        os.close(os.open(workspace / f"f{n:06d}", os.O_CREAT | os.O_WRONLY, 0o600))
    lines = text(await ListDir().run({}, context(workspace))).split("\n")
    assert lines[:2] == ["f000000", "f000001"] and lines[999] == "f000999"
    assert lines[1000:] == ["[99000 more entries not shown]"]
