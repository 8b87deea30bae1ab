"""The journal descriptor cache (``acp_agent/journal/descriptors.py``): its invariants, on real files.

Each test builds its own small ``DescriptorCache`` so it can see eviction with a handful of
files; the process-wide one is exercised by the subprocess tests (``test_many_sessions.py``).
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

import pytest

from acp_agent.journal.descriptors import DescriptorCache, default_capacity
from acp_agent.journal.files import OsJournalFile, open_journal_file, rename_journal


def journal(path: Path, cache: DescriptorCache, *, create: bool = True) -> OsJournalFile:
    flags = os.O_WRONLY | os.O_CLOEXEC | (os.O_CREAT | os.O_TRUNC if create else 0)
    return OsJournalFile(os.open(path, flags, 0o600), path, cache)


def open_fds() -> set[int]:
    return {int(name) for name in os.listdir("/proc/self/fd")}


def test_many_journals_keep_at_most_capacity_descriptors_and_every_byte_lands(
    tmp_path: Path,
) -> None:
    cache = DescriptorCache(capacity=4)
    before = open_fds()
    files = [journal(tmp_path / f"j{i}", cache) for i in range(20)]
    for round_ in range(3):
        for index, file in enumerate(files):
            file.write(b"%d.%d\n" % (index, round_))
            file.fdatasync()
            assert cache.open_count <= 4
    assert len(open_fds() - before) <= 4
    assert cache.evictions > 0 and cache.reopens > 0  # the files really were closed and reopened
    for index in range(20):
        assert (tmp_path / f"j{index}").read_bytes() == b"%d.0\n%d.1\n%d.2\n" % ((index,) * 3)
    for file in files:
        file.close()
    assert cache.open_count == 0
    assert open_fds() - before == set()


def test_a_reopened_file_writes_at_its_logical_end_after_a_truncate(tmp_path: Path) -> None:
    # files.py: "every byte lands exactly where the model says" — also across a reopen
    cache = DescriptorCache(capacity=1)
    first, other = journal(tmp_path / "a", cache), journal(tmp_path / "b", cache)
    first.write(b"durable\ntorn")
    first.truncate(8)
    other.write(b"x")  # evicts ``first``
    assert first.fd == -1
    first.write(b"next\n")
    first.close()
    other.close()
    assert (tmp_path / "a").read_bytes() == b"durable\nnext\n"


def test_a_borrowed_descriptor_is_never_evicted(tmp_path: Path) -> None:
    cache = DescriptorCache(capacity=2)
    held = journal(tmp_path / "held", cache)
    with cache.borrow(held) as fd:
        others = [journal(tmp_path / f"o{i}", cache) for i in range(5)]
        for other in others:
            other.write(b"o\n")
        os.fstat(fd)  # still open
        assert held.fd == fd
        os.pwrite(fd, b"held\n", 0)
    for file in [held, *others]:
        file.close()
    assert (tmp_path / "held").read_bytes() == b"held\n"


def test_a_file_replaced_behind_an_evicted_journal_is_never_written(tmp_path: Path) -> None:
    cache = DescriptorCache(capacity=1)
    victim, other = journal(tmp_path / "j", cache), journal(tmp_path / "k", cache)
    victim.write(b"mine\n")
    other.write(b"x")  # evicts ``victim``
    impostor = tmp_path / "impostor"
    impostor.write_bytes(b"someone else's\n")
    os.replace(impostor, tmp_path / "j")
    with pytest.raises(OSError, match="journal file was replaced") as caught:
        victim.write(b"more\n")
    assert caught.value.errno == errno.ESTALE
    assert (tmp_path / "j").read_bytes() == b"someone else's\n"
    victim.close()
    other.close()


def test_a_staged_journal_follows_its_rename_while_evicted(tmp_path: Path) -> None:
    # opening.py writes the header to journal.jsonl.new, renames it, then flushes into it
    cache = DescriptorCache(capacity=1)
    staging, final = tmp_path / "journal.jsonl.new", tmp_path / "journal.jsonl"
    file = open_journal_file(staging, create=True, cache=cache)
    file.write(b"header\n")
    rename_journal(staging, final)
    other = journal(tmp_path / "other", cache)  # evicts ``file``
    assert file.fd == -1
    file.write(b"line\n")
    file.close()
    other.close()
    assert final.read_bytes() == b"header\nline\n"
    assert not staging.exists()


class ExhaustedOnce:
    """A handle whose first reopen meets EMFILE, as a process out of descriptors does."""

    def __init__(self, path: Path) -> None:
        self.fd = -1
        self.path = path
        self.attempts = 0

    def reopen(self) -> int:
        self.attempts += 1
        if self.attempts == 1:
            raise OSError(errno.EMFILE, "Too many open files")
        return os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)

    def close_fd(self, fd: int) -> None:
        os.close(fd)


def test_running_out_of_descriptors_closes_every_idle_one_and_retries_once(
    tmp_path: Path,
) -> None:
    cache = DescriptorCache(capacity=8)
    idle = [journal(tmp_path / f"i{i}", cache) for i in range(3)]
    (tmp_path / "x").write_bytes(b"")
    handle = ExhaustedOnce(tmp_path / "x")
    with cache.borrow(handle) as fd:
        assert handle.attempts == 2
        assert [file.fd for file in idle] == [-1, -1, -1]
        os.write(fd, b"ok")
    cache.forget(handle)
    for file in idle:
        file.close()
    assert (tmp_path / "x").read_bytes() == b"ok"


def test_an_exhaustion_that_persists_reaches_the_caller(tmp_path: Path) -> None:
    class AlwaysExhausted(ExhaustedOnce):
        def reopen(self) -> int:
            self.attempts += 1
            raise OSError(errno.EMFILE, "Too many open files")

    cache = DescriptorCache(capacity=8)
    handle = AlwaysExhausted(tmp_path / "x")
    with pytest.raises(OSError) as caught, cache.borrow(handle):
        pass
    assert caught.value.errno == errno.EMFILE
    assert handle.attempts == 2
    assert cache.open_count == 0  # the failed borrow is not counted as open


def test_the_default_capacity_leaves_three_quarters_of_the_limit_free() -> None:
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    capacity = default_capacity()
    assert 16 <= capacity <= 256
    if soft != resource.RLIM_INFINITY:
        assert capacity <= max(16, soft // 4)


def test_threads_flushing_many_journals_through_a_tiny_cache_lose_no_byte(tmp_path: Path) -> None:
    # descriptors.py: "a borrowed descriptor is never closed by eviction" — with 8 threads and
    # 3 slots, evictions race with borrows all the time; each thread owns its files, as each
    # writer owns its journal (one borrower per handle at a time)
    cache = DescriptorCache(capacity=3)
    files = [journal(tmp_path / f"t{i}", cache) for i in range(16)]
    rounds = 200

    def work(mine: list[OsJournalFile]) -> None:
        for round_ in range(rounds):
            for file in mine:
                file.write(b"%d\n" % round_)

    threads = [threading.Thread(target=work, args=(files[i::8],)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)
    assert cache.evictions > 0
    expected = b"".join(b"%d\n" % n for n in range(rounds))
    for index, file in enumerate(files):
        file.close()
        assert (tmp_path / f"t{index}").read_bytes() == expected
    assert cache.open_count == 0
