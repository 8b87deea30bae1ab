"""Injected write and fsync failures: reported, kept in memory, retried, never torn or doubled."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

import acp_agent
from acp_agent.journal.errors import JournalFlushError
from acp_agent.journal.faults import FAULTS_ENV, Fault, FaultKind, FaultOp
from acp_agent.journal.writer import JournalHealth, JournalWriter

from .builders import HEADER, RecordingFactory, journal_bytes, numbered, user

REPO = Path(acp_agent.__file__).resolve().parents[1]
TORN_EVERY_TIME = "s-bad/write:short@2,s-bad/write:eio@3,s-bad/write:short@4,s-bad/write:eio@5x*"
ENTRIES = numbered(user(f"message {i}") for i in range(12))

FAULTS = {
    "write EIO": (
        [(FaultOp.WRITE, FaultKind.EIO)],
        "[Errno 5] Input/output error (injected into write)",
    ),
    "disk full": (
        [(FaultOp.WRITE, FaultKind.ENOSPC)],
        "[Errno 28] No space left on device (injected into write)",
    ),
    "fsync EIO": (
        [(FaultOp.FSYNC, FaultKind.EIO)],
        "[Errno 5] Input/output error (injected into fsync)",
    ),
    "torn write": (
        [(FaultOp.WRITE, FaultKind.SHORT), (FaultOp.WRITE, FaultKind.ENOSPC)],
        "[Errno 28] No space left on device (injected into write)",
    ),
}


def journal_of(sdir: Path) -> bytes:
    return (sdir / "journal.jsonl").read_bytes()


async def started(sdir: Path, files: RecordingFactory) -> JournalWriter:
    """A writer whose first five entries are durable and next five only appended."""
    writer = await JournalWriter.create(sdir, HEADER, file_factory=files)
    for entry in ENTRIES[:5]:
        writer.append(entry)
    await writer.flush()
    for entry in ENTRIES[5:10]:
        writer.append(entry)
    return writer


@pytest.mark.parametrize("name", FAULTS)
async def test_a_failed_flush_is_reported_kept_and_retried(
    sdir: Path, files: RecordingFactory, name: str
) -> None:
    faults, text = FAULTS[name]
    writer = await started(sdir, files)
    for op, kind in faults:
        files.file.plan.arm(op, kind)
    with capture_logs() as logs, pytest.raises(JournalFlushError) as caught:
        await writer.flush()
    assert caught.value.error == text
    assert caught.value.unflushed == 5
    assert (
        str(caught.value) == f"journal flush failed for session 's1': {text} (5 lines not durable)"
    )
    assert writer.health == JournalHealth(healthy=False, unflushed=5, last_error=text)
    assert writer.durable_seq == 5
    assert [e for e in logs if e["event"] == "journal_flush_failed"] == [
        {
            "event": "journal_flush_failed",
            "log_level": "error",
            "session_id": "s1",
            "error": text,
            "unflushed": 5,
            "durable_seq": 5,
        }
    ]

    writer.append(ENTRIES[10])  # still admitted while unhealthy
    assert writer.health.unflushed == 6
    await writer.flush()  # the fault has cleared
    assert writer.health == JournalHealth(healthy=True, unflushed=0, last_error=None)
    assert writer.durable_seq == 11
    assert journal_of(sdir) == journal_bytes(ENTRIES[:11])  # nothing torn, nothing doubled
    await writer.close()
    reopened, loaded = await JournalWriter.open(sdir)
    assert (loaded.entries, loaded.repaired) == (ENTRIES[:11], None)
    await reopened.close()


async def test_the_retry_truncates_bytes_written_before_a_failed_fsync(
    sdir: Path, files: RecordingFactory
) -> None:
    writer = await started(sdir, files)
    durable = journal_of(sdir)
    files.file.plan.arm(FaultOp.FSYNC, FaultKind.EIO)
    with pytest.raises(JournalFlushError):
        await writer.flush()
    assert journal_of(sdir) == journal_bytes(ENTRIES[:10])  # written, but not trusted
    files.file.plan.arm(FaultOp.WRITE, FaultKind.EIO)
    with pytest.raises(JournalFlushError):
        await writer.flush()
    assert journal_of(sdir) == durable  # the retry cut back to the durable size first
    truncates = files.file.truncates
    await writer.flush()
    assert files.file.truncates == truncates  # already at the durable size: nothing to cut
    assert journal_of(sdir) == journal_bytes(ENTRIES[:10])
    await writer.close()


async def test_a_torn_write_leaves_a_fragment_until_the_retry(
    sdir: Path, files: RecordingFactory
) -> None:
    writer = await started(sdir, files)
    files.file.plan.arm(FaultOp.WRITE, FaultKind.SHORT)
    files.file.plan.arm(FaultOp.WRITE, FaultKind.EIO)
    with pytest.raises(JournalFlushError):
        await writer.flush()
    on_disk = journal_of(sdir)
    assert len(journal_bytes(ENTRIES[:5])) < len(on_disk) < len(journal_bytes(ENTRIES[:10]))
    await writer.flush()
    assert journal_of(sdir) == journal_bytes(ENTRIES[:10])
    await writer.close()


async def test_a_short_write_alone_is_not_an_error(sdir: Path, files: RecordingFactory) -> None:
    writer = await started(sdir, files)
    writes = files.file.writes
    files.file.plan.arm(FaultOp.WRITE, FaultKind.SHORT, times=3)
    await writer.flush()
    assert files.file.writes == writes + 4  # the loop finished the line batch
    assert writer.health.healthy
    assert journal_of(sdir) == journal_bytes(ENTRIES[:10])
    await writer.close()


async def test_fail_the_next_n_flushes_then_succeed(sdir: Path, files: RecordingFactory) -> None:
    writer = await started(sdir, files)
    files.file.plan.arm(FaultOp.FSYNC, FaultKind.EIO, times=3)
    for attempt, unflushed in enumerate((6, 7, 7)):
        if attempt < 2:
            writer.append(ENTRIES[10 + attempt])
        with pytest.raises(JournalFlushError) as caught:
            await writer.flush()
        assert caught.value.unflushed == unflushed
    await writer.flush()
    assert writer.health == JournalHealth(healthy=True, unflushed=0, last_error=None)
    assert files.file.truncates == 3  # every attempt after a failed fsync started by cutting back
    assert journal_of(sdir) == journal_bytes(ENTRIES)
    await writer.close()


async def test_a_failing_truncate_blocks_the_write_that_would_follow_it(
    sdir: Path, files: RecordingFactory
) -> None:
    writer = await started(sdir, files)
    files.file.plan.arm(FaultOp.FSYNC, FaultKind.EIO)
    with pytest.raises(JournalFlushError):
        await writer.flush()
    files.file.plan.arm(FaultOp.TRUNCATE, FaultKind.EIO)
    writes = files.file.writes
    with pytest.raises(JournalFlushError, match="injected into truncate"):
        await writer.flush()
    assert files.file.writes == writes
    await writer.flush()
    assert journal_of(sdir) == journal_bytes(ENTRIES[:10])
    await writer.close()


async def test_close_reports_a_failed_final_flush_and_still_releases(
    sdir: Path, files: RecordingFactory
) -> None:
    writer = await started(sdir, files)
    files.file.plan.arm(FaultOp.FSYNC, FaultKind.EIO)
    with pytest.raises(JournalFlushError):
        await writer.close()
    assert writer.health.unflushed == 5
    reopened, loaded = await JournalWriter.open(sdir)  # the lock is free again
    assert loaded.entries == ENTRIES[:10]  # the fsync failed, but these bytes did reach the file
    await reopened.close()


# -- through the environment, in a real process -----------------------------------------------------

CHILD = """
import json, os, sys, anyio, structlog
from pathlib import Path
from acp_agent.journal.events import Entry, SessionHeader, UserMessage
from acp_agent.journal.errors import JournalFlushError
from acp_agent.journal.writer import JournalWriter
from acp_agent.content import TextContent

async def main() -> None:
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
    state = Path(sys.argv[1])
    report = {}
    for sid in ("s-bad", "s-good"):
        writer = await JournalWriter.create(state / "sessions" / sid, SessionHeader(id=sid, created_at=1, cwd="/"))
        outcomes = []
        for seq in (1, 2):
            writer.append(Entry(seq, 0, UserMessage(f"m{seq}", [TextContent(text="hello " + "x" * 10 * seq)], {"kind": "client"})))
            try:
                await writer.flush()
                outcomes.append("ok")
            except JournalFlushError as exc:
                outcomes.append(exc.error)
        report[sid] = {"outcomes": outcomes, "health": writer.health.unflushed}
    print(json.dumps(report), flush=True)
    os._exit(0)  # die without closing: what is on disk is what a crash leaves

anyio.run(main)
"""


def run_child(state_dir: Path) -> subprocess.CompletedProcess[str]:
    """Run CHILD with faults for session s-bad: every flush tears a line, then fails."""
    env = {**os.environ, "PYTHONPATH": str(REPO), FAULTS_ENV: TORN_EVERY_TIME}
    command = [sys.executable, "-c", CHILD, str(state_dir)]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=60, check=False)


def test_faults_requested_through_the_environment_hit_only_their_session(tmp_path: Path) -> None:
    done = run_child(tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    error = "[Errno 5] Input/output error (injected into write)"
    assert report == {
        "s-bad": {"outcomes": [error, error], "health": 2},
        "s-good": {"outcomes": ["ok", "ok"], "health": 0},
    }
    assert "journal_flush_failed" in done.stderr
    bad = (tmp_path / "sessions" / "s-bad" / "journal.jsonl").read_bytes()
    assert not bad.endswith(b"\n")  # the crash left part of a line behind


async def test_the_torn_tail_a_crash_leaves_is_moved_aside_on_open(tmp_path: Path) -> None:
    assert run_child(tmp_path).returncode == 0
    sdir = tmp_path / "sessions" / "s-bad"
    torn = (sdir / "journal.jsonl").read_bytes()
    writer, loaded = await JournalWriter.open(sdir)
    # the second attempt rewrote m1 whole and half of m2: m1 is there, never acknowledged
    assert [entry.seq for entry in loaded.entries] == [1]
    assert loaded.repaired is not None
    good_end = torn.rindex(b"\n") + 1
    assert (loaded.repaired.offset, loaded.repaired.length) == (good_end, len(torn) - good_end)
    assert loaded.repaired.side_file.read_bytes() == torn[good_end:]
    assert (sdir / "journal.jsonl").read_bytes() == torn[:good_end]
    await writer.close()


async def test_the_header_is_call_one_so_at_2_is_the_first_flush(
    sdir: Path, files: RecordingFactory
) -> None:
    files.faults.append(Fault(FaultOp.FSYNC, FaultKind.EIO, first=2))
    writer = await JournalWriter.create(sdir, HEADER, file_factory=files)
    writer.append(ENTRIES[0])
    with pytest.raises(JournalFlushError):
        await writer.flush()
    await writer.flush()
    assert journal_of(sdir) == journal_bytes(ENTRIES[:1])
    await writer.close()


async def test_a_failed_flush_now_is_reported_kept_and_retried(
    sdir: Path, files: RecordingFactory
) -> None:
    # writer.py: ``flush_now`` keeps ``flush()``'s promise; the outcome is recorded on the loop
    # when the flusher thread answers, so health is unhealthy before the caller looks.
    writer = await started(sdir, files)
    files.file.plan.arm(FaultOp.FSYNC, FaultKind.EIO)
    with capture_logs() as logs, pytest.raises(JournalFlushError) as caught:
        await writer.flush_now()
    text = "[Errno 5] Input/output error (injected into fsync)"
    assert (caught.value.error, caught.value.unflushed) == (text, 5)
    assert isinstance(caught.value.__cause__, OSError)
    assert writer.health == JournalHealth(healthy=False, unflushed=5, last_error=text)
    assert [e["event"] for e in logs].count("journal_flush_failed") == 1
    await writer.flush_now()
    assert writer.health == JournalHealth(healthy=True, unflushed=0)
    assert writer.durable_seq == 10
    assert journal_of(sdir) == journal_bytes(ENTRIES[:10])
    await writer.close()
