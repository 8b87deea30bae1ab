"""``/export``'s file: where it goes, how it is made, what it refuses (the wire: test_export_wire)."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path

import pytest

from acp_agent.commands.export import (
    ExportRefused,
    export_path,
    export_session,
    write_export,
)
from acp_agent.journal.events import Entry, SessionHeader
from tests.export.sample import HEADER, HOSTILE_TITLE, entries


@dataclass(frozen=True)
class Source:
    header: SessionHeader
    entries: list[Entry]
    title: str | None
    state_dir: Path


def test_the_file_is_named_by_session_and_time() -> None:
    path = export_path(Path("/s"), "abc", ".html", 1_767_225_600_123)
    assert path == Path("/s/exports/abc-20260101T000000.123Z.html")


async def test_html_by_default_under_the_state_dir_private(tmp_path: Path) -> None:
    answer = await export_session(Source(HEADER, entries(), HOSTILE_TITLE, tmp_path), "")
    (written,) = (tmp_path / "exports").iterdir()
    assert answer == f"Exported 26 events of session {HEADER.id} to {written}"
    assert written.name.startswith(f"{HEADER.id}-") and written.suffix == ".html"
    assert stat.S_IMODE(written.stat().st_mode) == 0o600
    assert stat.S_IMODE(written.parent.stat().st_mode) == 0o700
    assert written.read_text("utf-8").startswith("<!doctype html>")


async def test_markdown_when_asked(tmp_path: Path) -> None:
    await export_session(Source(HEADER, entries(), None, tmp_path), " MD ")
    (written,) = (tmp_path / "exports").iterdir()
    assert written.suffix == ".md" and "## Turn 1" in written.read_text("utf-8")


async def test_anything_else_is_refused_and_nothing_written(tmp_path: Path) -> None:
    with pytest.raises(ExportRefused, match="/export takes html or md, not 'pdf'"):
        await export_session(Source(HEADER, entries(), None, tmp_path), "pdf")
    assert not (tmp_path / "exports").exists()


def test_a_name_taken_gets_a_numbered_sibling(tmp_path: Path) -> None:
    path = tmp_path / "exports" / "s-1.html"
    first = write_export(path, HEADER, entries(), "html", None)
    second = write_export(path, HEADER, entries(), "html", None)
    assert (first, second) == (path, tmp_path / "exports" / "s-1-2.html")
