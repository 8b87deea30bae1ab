"""``acp-agent journal export`` and ``journal check`` over every session, as a user runs them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.export.sample import SESSION_ID, write_sample
from tests.journal.builders import write_journal

pytestmark = pytest.mark.subprocess


def journal(state: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "acp_agent", "journal", *args, "--state-dir", str(state)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_export_writes_html_to_stdout_by_default(tmp_path: Path) -> None:
    write_sample(tmp_path)
    done = journal(tmp_path, "export", SESSION_ID)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("<!doctype html>") and done.stdout.endswith("</html>\n")
    assert done.stderr == ""


def test_export_writes_markdown_to_a_file_and_says_so(tmp_path: Path) -> None:
    write_sample(tmp_path)
    out = tmp_path / "t.md"
    done = journal(tmp_path, "export", SESSION_ID, "--format", "md", "-o", str(out))
    assert done.returncode == 0 and done.stdout == ""
    assert done.stderr == f"{SESSION_ID}: wrote {out}\n"
    assert "## Turn 2" in out.read_text("utf-8")


def test_export_refuses_what_it_cannot_do(tmp_path: Path) -> None:
    write_sample(tmp_path)
    unknown = journal(tmp_path, "export", "nope")
    assert unknown.returncode == 2 and "no session 'nope'" in unknown.stderr
    invalid = journal(tmp_path, "export", "../x")
    assert invalid.returncode == 2
    bad_format = journal(tmp_path, "export", SESSION_ID, "--format", "pdf")
    assert bad_format.returncode == 2 and "invalid choice" in bad_format.stderr
    unwritable = journal(tmp_path, "export", SESSION_ID, "-o", str(tmp_path / "no" / "x.html"))
    assert unwritable.returncode == 2 and "cannot write" in unwritable.stderr


def test_export_of_a_damaged_journal_says_so_and_exports_the_good_part(tmp_path: Path) -> None:
    directory = write_sample(tmp_path)
    with (directory / "journal.jsonl").open("ab") as file:
        file.write(b'{"seq":27,"ti')
    done = journal(tmp_path, "export", SESSION_ID, "--format", "md")
    assert done.returncode == 0 and "ignoring a damaged tail (seq 27" in done.stderr
    assert "## Turn 2" in done.stdout


def test_check_without_an_id_checks_every_session(tmp_path: Path) -> None:
    write_sample(tmp_path, "a")
    write_sample(tmp_path, "b")
    good = journal(tmp_path, "check")
    assert good.returncode == 0 and good.stdout == "a: ok\nb: ok\n" and good.stderr == ""
    write_journal(tmp_path / "sessions" / "c", b"not a journal\n")
    bad = journal(tmp_path, "check")
    assert bad.returncode == 1
    lines = bad.stdout.splitlines()
    assert lines[:2] == ["a: ok", "b: ok"] and lines[2].startswith("c: ")


def test_check_of_an_empty_state_dir(tmp_path: Path) -> None:
    done = journal(tmp_path, "check")
    assert done.returncode == 0 and done.stdout == f"no session under {tmp_path}\n"
