"""Progress bars: drawn on a terminal (a pty as stderr), and nothing on a pipe.

Through the commands a user runs: ``journal check`` over every session, ``journal export`` of a
large session and ``replay run`` over two fixtures; and ``progress`` itself, as ``make bench``
uses it (its lines above the bar, its bar only on a terminal).
"""

from __future__ import annotations

import errno
import fcntl
import os
import shutil
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from acp_agent import progress as progress_module
from tests.export.sample import large_events, write_sample
from tests.support.acp_schema import REPO_ROOT

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(120)]


def terminal() -> tuple[int, int]:
    """A pty (master, slave) of 100 columns by 30 rows (a fresh pty has 0 by 0, and a bar
    fits in no column)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    return master, slave


def run_on_terminal(argv: list[str]) -> tuple[int, str]:
    """Run ``argv`` with a pty as its stderr; its exit status and what it drew there."""
    master, slave = terminal()
    try:
        child = subprocess.Popen(
            argv, stdout=subprocess.DEVNULL, stderr=slave, stdin=subprocess.DEVNULL
        )
    finally:
        os.close(slave)
    drawn = read_all(master)
    return child.wait(timeout=60), drawn


def read_all(master: int) -> str:
    """Everything written to the pty until every slave end is closed; closes ``master``."""
    drawn = bytearray()
    try:
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError as exc:  # EIO: every slave end is closed
                if exc.errno != errno.EIO:
                    raise
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(master)
    return drawn.decode("utf-8", "replace")


def run_on_pipe(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def agent(*args: str) -> list[str]:
    return [sys.executable, "-m", "acp_agent", *args]


def test_journal_check_over_every_session(tmp_path: Path) -> None:
    for name in ("a", "b", "c"):
        write_sample(tmp_path, name)
    argv = agent("journal", "check", "--state-dir", str(tmp_path))
    status, drawn = run_on_terminal(argv)
    assert status == 0
    assert "check:" in drawn and "/3" in drawn and "session" in drawn
    quiet = run_on_pipe(argv)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.count(": ok") == 3


def test_journal_check_of_one_session_draws_nothing(tmp_path: Path) -> None:
    write_sample(tmp_path, "a")
    status, drawn = run_on_terminal(agent("journal", "check", "a", "--state-dir", str(tmp_path)))
    assert status == 0 and drawn == ""


def test_journal_export_of_a_large_session(tmp_path: Path) -> None:
    write_sample(tmp_path, "big", large_events(700))  # 6,300 events
    out = tmp_path / "big.html"
    argv = agent("journal", "export", "big", "-o", str(out), "--state-dir", str(tmp_path))
    status, drawn = run_on_terminal(argv)
    assert status == 0 and "export:" in drawn and "/6300" in drawn and "event" in drawn
    quiet = run_on_pipe(argv)
    assert quiet.returncode == 0 and quiet.stderr == f"big: wrote {out}\n"


def test_journal_export_of_a_small_session_draws_nothing(tmp_path: Path) -> None:
    write_sample(tmp_path, "small")
    out = tmp_path / "s.html"
    argv = agent("journal", "export", "small", "-o", str(out), "--state-dir", str(tmp_path))
    status, drawn = run_on_terminal(argv)
    assert status == 0 and drawn.replace("\r", "") == f"small: wrote {out}\n"


def test_replay_run(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    for name in ("inject-during-tool-batch", "hook-prompt-contexts"):
        shutil.copytree(REPO_ROOT / "fixtures" / "replays" / name, fixtures / name)
    argv = agent("replay", "run", str(fixtures))
    status, drawn = run_on_terminal(argv)
    assert status == 0 and "replay:" in drawn and "/2" in drawn and "fixture" in drawn
    quiet = run_on_pipe(argv)
    assert quiet.returncode == 0 and quiet.stderr == ""
    assert "replay: 2/2 fixtures matched" in quiet.stdout


def test_progress_notes_go_above_the_bar_on_a_terminal_and_alone_on_a_pipe(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    master, slave = terminal()
    with os.fdopen(slave, "w") as stream:
        monkeypatch.setattr(sys, "stderr", stream)
        with progress_module.progress("bench", 2, unit="case", long_from=2) as bar:
            bar.describe("first")
            bar.note("bench: first: 0.1 s")
            bar.advance()
    drawn = read_all(master)
    assert "bench:" in drawn and "bench: first: 0.1 s" in drawn and "case" in drawn
    with (tmp_path / "log").open("w+") as log:
        monkeypatch.setattr(sys, "stderr", log)
        with progress_module.progress("bench", 2, unit="case", long_from=2) as bar:
            bar.note("bench: first: 0.1 s")
            bar.advance(2)
        log.seek(0)
        assert log.read() == "bench: first: 0.1 s\n"
