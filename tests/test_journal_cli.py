"""``acp-agent journal check``: exit 0 on a good journal, 1 with a precise message on a bad one."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio

from acp_agent.content import TextContent
from acp_agent.journal.events import Entry, SessionHeader, StepStart, TurnStart, UserMessage, source
from acp_agent.journal.writer import JournalWriter


def run_check(state: Path, session_id: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "acp_agent",
            "journal",
            "check",
            session_id,
            "--state-dir",
            str(state),
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def write_journal(state: Path, session_id: str, events: list[object]) -> None:
    async def write() -> None:
        header = SessionHeader(id=session_id, created_at=1, cwd="/tmp")
        writer = await JournalWriter.create(state / "sessions" / session_id, header)
        for seq, event in enumerate(events, start=1):
            writer.append(Entry(seq, seq, event))  # type: ignore[arg-type]
        await writer.close()

    anyio.run(write)


def test_a_journal_with_out_of_turn_messages_passes(tmp_path: Path) -> None:
    message = UserMessage("m1", [TextContent(text="ctx")], source("client"))
    write_journal(tmp_path, "good", [message, message])
    result = run_check(tmp_path, "good")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "good: ok"


def test_a_violation_exits_1_naming_seq_and_rule(tmp_path: Path) -> None:
    write_journal(tmp_path, "bad", [TurnStart(1), StepStart(1, 1), TurnStart(2)])
    result = run_check(tmp_path, "bad")
    assert result.returncode == 1
    assert "bad: seq 3:" in result.stdout
    assert "turn/start" in result.stdout


def test_an_unknown_session_is_a_usage_error(tmp_path: Path) -> None:
    result = run_check(tmp_path, "nope")
    assert result.returncode == 2
    assert "no session 'nope'" in result.stderr
    result = run_check(tmp_path, "../etc")
    assert result.returncode == 2
