from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from anyio.lowlevel import checkpoint

import acp_agent
from acp_agent.journal.errors import (
    JournalClosed,
    JournalCorrupt,
    JournalExists,
    JournalLocked,
    JournalNotFound,
)
from acp_agent.journal.events import SessionHeader, TurnStart
from acp_agent.journal.faults import FaultyJournalFile
from acp_agent.journal.files import open_journal_file
from acp_agent.journal.format import encode_header
from acp_agent.journal.paths import InvalidSessionId
from acp_agent.journal.writer import JournalHealth, JournalWriter

from .builders import (
    HEADER,
    RecordingFactory,
    journal_bytes,
    numbered,
    simple_turn,
    tool_turn,
    user,
    write_journal,
)

REPO = Path(acp_agent.__file__).resolve().parents[1]


def journal_of(sdir: Path) -> bytes:
    return (sdir / "journal.jsonl").read_bytes()


def names_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- create ------------------------------------------------------------------------------------------


async def test_create_writes_the_header_durably_in_private_files(
    sdir: Path, state_dir: Path, files: RecordingFactory
) -> None:
    async with await JournalWriter.create(sdir, HEADER, file_factory=files):
        assert journal_of(sdir) == encode_header(HEADER)
        assert (files.file.writes, files.file.fdatasyncs) == (1, 1)
    assert names_in(sdir) == ["journal.jsonl", "lock"]
    for directory in (state_dir, state_dir / "sessions", sdir):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    for file in ("journal.jsonl", "lock"):
        assert stat.S_IMODE((sdir / file).stat().st_mode) == 0o600


async def test_create_refuses_an_existing_journal(sdir: Path) -> None:
    await (await JournalWriter.create(sdir, HEADER)).close()
    with pytest.raises(JournalExists, match="'s1' already has a journal"):
        await JournalWriter.create(sdir, HEADER)
    assert journal_of(sdir) == encode_header(HEADER)
    await (await JournalWriter.open(sdir))[0].close()  # and the lock was released


async def test_create_checks_the_id_before_touching_a_path(state_dir: Path) -> None:
    with pytest.raises(InvalidSessionId):
        await JournalWriter.create(state_dir / "..", SessionHeader(id="..", created_at=1, cwd="/"))
    with pytest.raises(ValueError, match="does not belong"):
        await JournalWriter.create(state_dir / "sessions" / "other", HEADER)
    assert names_in(state_dir.parent) == []


async def test_a_crashed_create_leaves_no_journal(sdir: Path) -> None:
    """Only the staging file can be left behind; the id stays usable."""
    write_journal(sdir, b'{"type":"sess').rename(sdir / "journal.jsonl.new")
    with pytest.raises(JournalNotFound):
        await JournalWriter.open(sdir)
    await (await JournalWriter.create(sdir, HEADER)).close()
    assert journal_of(sdir) == encode_header(HEADER)
    assert not (sdir / "journal.jsonl.new").exists()


# -- append and flush ----------------------------------------------------------------------------------


async def test_append_only_touches_memory(sdir: Path, files: RecordingFactory) -> None:
    writer = await JournalWriter.create(sdir, HEADER, file_factory=files)
    for entry in numbered(tool_turn(1, ["c1", "c2"])):
        writer.append(entry)
    assert journal_of(sdir) == encode_header(HEADER)
    assert (files.file.writes, files.file.fdatasyncs) == (1, 1)
    assert writer.health == JournalHealth(healthy=True, unflushed=13, last_error=None)
    assert (writer.durable_seq, writer.next_seq) == (0, 14)
    await writer.close()


async def test_group_commit_is_one_write_and_one_fdatasync(
    sdir: Path, files: RecordingFactory
) -> None:
    writer = await JournalWriter.create(sdir, HEADER, file_factory=files)
    entries = numbered(user(f"m{i}") for i in range(200))
    for entry in entries:
        writer.append(entry)
    await writer.flush()
    assert (files.file.writes, files.file.fdatasyncs) == (2, 2)  # header + one flush
    assert (writer.stats.flushes, writer.stats.writes, writer.stats.syncs) == (1, 2, 2)
    assert journal_of(sdir) == journal_bytes(entries)
    assert writer.durable_seq == 200
    await writer.close()


async def test_flush_with_nothing_pending_makes_no_syscall(
    sdir: Path, files: RecordingFactory
) -> None:
    writer = await JournalWriter.create(sdir, HEADER, file_factory=files)
    writer.append(numbered([user()])[0])
    await writer.flush()
    before = (files.file.writes, files.file.fdatasyncs, files.file.truncates)
    for _ in range(5):
        await writer.flush()
    assert (files.file.writes, files.file.fdatasyncs, files.file.truncates) == before
    await writer.close()
    assert (files.file.writes, files.file.fdatasyncs) == before[:2]


class GatedFile(FaultyJournalFile):
    """fdatasync blocks until the test opens the gate; tells the test when it is waiting."""

    def __init__(self, path: Path, *, create: bool) -> None:
        super().__init__(open_journal_file(path, create=create))
        self.gate = threading.Event()
        self.gate.set()
        self.waiting = threading.Event()

    def fdatasync(self) -> None:
        self.waiting.set()
        self.gate.wait(timeout=30)
        super().fdatasync()


async def gated_writer(sdir: Path) -> tuple[JournalWriter, GatedFile]:
    """A new journal whose fdatasync waits at its gate, closed (``file.gate.set()`` opens it)."""
    opened: list[GatedFile] = []

    def factory(path: Path, *, create: bool) -> GatedFile:
        opened.append(GatedFile(path, create=create))
        return opened[-1]

    writer = await JournalWriter.create(sdir, HEADER, file_factory=factory)
    file = opened[0]
    file.gate.clear()
    file.waiting.clear()
    return writer, file


async def test_concurrent_flushes_serialize_and_coalesce(sdir: Path) -> None:
    writer, file = await gated_writer(sdir)
    entries = numbered(user(f"m{i}") for i in range(20))
    for entry in entries[:10]:
        writer.append(entry)
    done: list[str] = []

    async def flush(name: str) -> None:
        await writer.flush()
        done.append(name)

    async with anyio.create_task_group() as tg:
        tg.start_soon(flush, "first")
        await anyio.to_thread.run_sync(file.waiting.wait)  # the first flush is inside fdatasync
        for entry in entries[10:]:
            writer.append(entry)
        for name in ("second", "third", "fourth"):
            tg.start_soon(flush, name)
        for _ in range(10):
            await checkpoint()
        assert done == []  # nobody returns before the running flush is durable
        file.gate.set()
    assert done[0] == "first" and sorted(done) == ["first", "fourth", "second", "third"]
    assert (file.writes, file.fdatasyncs) == (3, 3)  # header, the first flush, ONE for the rest
    assert writer.durable_seq == 20
    assert journal_of(sdir) == journal_bytes(entries)
    await writer.close()


async def test_append_checks_seq_and_refuses_after_close(sdir: Path) -> None:
    writer = await JournalWriter.create(sdir, HEADER)
    with pytest.raises(ValueError, match="appended seq 2, expected 1"):
        writer.append(numbered([user()], first_seq=2)[0])
    await writer.close()
    await writer.close()
    with pytest.raises(JournalClosed):
        writer.append(numbered([user()])[0])


# -- open ----------------------------------------------------------------------------------------------


async def test_open_returns_the_history_and_appends_after_it(sdir: Path) -> None:
    entries = numbered([user("idle"), *simple_turn(1)])
    async with await JournalWriter.create(sdir, HEADER) as writer:
        for entry in entries:
            writer.append(entry)
    writer, loaded = await JournalWriter.open(sdir)
    assert (loaded.header, loaded.entries, loaded.repaired) == (HEADER, entries, None)
    assert (writer.durable_seq, writer.next_seq) == (7, 8)
    more = numbered([TurnStart(2)], first_seq=8)
    writer.append(more[0])
    await writer.close()
    assert journal_of(sdir) == journal_bytes(entries + more)


async def test_open_of_a_missing_journal(state_dir: Path, sdir: Path) -> None:
    with pytest.raises(JournalNotFound, match="has no journal"):
        await JournalWriter.open(sdir)
    with pytest.raises(InvalidSessionId):
        await JournalWriter.open(state_dir / "sessions" / "bad id")


async def test_open_refuses_a_journal_of_another_session(state_dir: Path) -> None:
    other = state_dir / "sessions" / "s2"
    data = journal_bytes([])
    write_journal(other, data)
    with pytest.raises(JournalCorrupt, match="header names session 's1', not 's2'"):
        await JournalWriter.open(other)
    assert (other / "journal.jsonl").read_bytes() == data


# -- the lock ------------------------------------------------------------------------------------------


async def test_a_second_writer_in_this_process_fails_fast(sdir: Path) -> None:
    writer = await JournalWriter.create(sdir, HEADER)
    with pytest.raises(
        JournalLocked, match=rf"session 's1' is already open by another writer \(pid {os.getpid()};"
    ):
        await JournalWriter.open(sdir)
    await writer.close()
    second, _ = await JournalWriter.open(sdir)
    with pytest.raises(JournalLocked):
        await JournalWriter.open(sdir)
    await second.close()


OPEN_SCRIPT = """
import sys, anyio
from pathlib import Path
from acp_agent.journal.errors import JournalLocked
from acp_agent.journal.writer import JournalWriter

async def main() -> None:
    try:
        writer, _ = await JournalWriter.open(Path(sys.argv[1]))
    except JournalLocked as exc:
        print("locked:", exc, flush=True)
        raise SystemExit(3)
    print("opened", flush=True)
    sys.stdin.readline()  # hold the lock until told (or killed)
    await writer.close()

anyio.run(main)
"""


def spawn_opener(sdir: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-c", OPEN_SCRIPT, str(sdir)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )


async def test_a_second_writer_in_another_process_fails_fast(sdir: Path) -> None:
    async with await JournalWriter.create(sdir, HEADER):
        with spawn_opener(sdir) as child:
            out, _ = child.communicate(timeout=30)  # a blocking lock would hang here
        assert child.returncode == 3
        assert out.startswith(
            f"locked: session 's1' is already open by another writer (pid {os.getpid()};"
        )


async def test_a_lock_held_by_another_process_dies_with_it(sdir: Path) -> None:
    await (await JournalWriter.create(sdir, HEADER)).close()
    with spawn_opener(sdir) as child:
        try:
            assert child.stdout is not None
            assert child.stdout.readline() == "opened\n"
            with pytest.raises(JournalLocked, match=f"pid {child.pid};") as caught:
                await JournalWriter.open(sdir)
            assert caught.value.holder_pid == child.pid
        finally:
            child.kill()
            child.wait(timeout=30)
    writer, _ = await JournalWriter.open(sdir)  # kill -9 freed it: no stale lock
    await writer.close()


async def test_flush_now_hands_the_lines_over_before_returning(sdir: Path) -> None:
    # writer.py: ``flush_now`` is ``flush()`` with the hand-off to the flusher thread made
    # before it returns (an idle injection's answer goes on while the fsync runs); nothing is
    # durable before the fdatasync returned, and a flush arriving meanwhile waits and coalesces.
    writer, file = await gated_writer(sdir)
    entries = numbered(user(f"m{i}") for i in range(6))
    for entry in entries[:3]:
        writer.append(entry)
    flushed = writer.flush_now()  # not awaited yet: the thread has the lines already
    assert await anyio.to_thread.run_sync(file.waiting.wait, 30)
    assert writer.durable_seq == 0 and writer.health.unflushed == 3
    for entry in entries[3:]:
        writer.append(entry)
    done: list[str] = []

    async def flush() -> None:
        await writer.flush()
        done.append("second")

    async with anyio.create_task_group() as tg:
        tg.start_soon(flush)
        for _ in range(10):
            await checkpoint()
        assert done == [] and writer.durable_seq == 0
        file.gate.set()
        await flushed
        assert writer.durable_seq >= 3
    assert done == ["second"] and writer.durable_seq == 6
    assert (file.writes, file.fdatasyncs) == (3, 3)  # header, the first flush, the second
    assert journal_of(sdir) == journal_bytes(entries)
    await writer.close()


async def test_flush_now_with_nothing_pending_or_while_a_flush_runs(
    sdir: Path, files: RecordingFactory
) -> None:
    writer = await JournalWriter.create(sdir, HEADER, file_factory=files)
    await writer.flush_now()  # nothing pending: no syscall
    assert (files.file.writes, files.file.fdatasyncs) == (1, 1)
    writer.append(numbered([user()])[0])
    first, second = writer.flush_now(), writer.flush_now()  # the second waits for the first
    await first
    await second
    assert (files.file.writes, files.file.fdatasyncs) == (2, 2)
    assert writer.durable_seq == 1
    await writer.close()
