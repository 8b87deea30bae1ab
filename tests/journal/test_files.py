from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from acp_agent.journal.faults import (
    FAULTS_ENV,
    Fault,
    FaultKind,
    FaultOp,
    FaultPlan,
    FaultyJournalFile,
    file_factory,
    parse_faults,
)
from acp_agent.journal.files import make_private_dirs, open_journal_file, write_private_file


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# -- modes -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mask", [0o022, 0o277, 0o000])
def test_journal_files_are_created_0600_whatever_the_umask(tmp_path: Path, mask: int) -> None:
    with umask(mask):
        open_journal_file(tmp_path / "j", create=True).close()
        write_private_file(tmp_path / "side", b"x")
    assert mode(tmp_path / "j") == 0o600
    assert mode(tmp_path / "side") == 0o600


@pytest.mark.parametrize("mask", [0o022, 0o777])
def test_created_directories_are_0700_and_existing_ones_are_left_alone(
    tmp_path: Path, mask: int
) -> None:
    tmp_path.chmod(0o755)
    with umask(mask):
        created = make_private_dirs(tmp_path / "a" / "b" / "c")
    assert created == [tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "c"]
    assert [mode(p) for p in created] == [0o700] * 3
    assert mode(tmp_path) == 0o755
    assert make_private_dirs(tmp_path / "a" / "b") == []


def test_private_files_are_never_overwritten(tmp_path: Path) -> None:
    write_private_file(tmp_path / "side", b"first")
    with pytest.raises(FileExistsError):
        write_private_file(tmp_path / "side", b"second")
    assert (tmp_path / "side").read_bytes() == b"first"


# -- the real file -------------------------------------------------------------------------------


def test_os_file_writes_at_its_logical_end_even_after_a_truncate(tmp_path: Path) -> None:
    path = tmp_path / "j"
    file = open_journal_file(path, create=True)
    assert file.write(b"durable\ntorn-frag") == 17
    file.truncate(8)
    assert file.size == 8
    file.write(b"next\n")
    file.fdatasync()
    file.close()
    file.close()  # idempotent
    assert path.read_bytes() == b"durable\nnext\n"


def test_reopening_starts_at_the_end_and_create_empties(tmp_path: Path) -> None:
    path = tmp_path / "j"
    path.write_bytes(b"abc\n")
    file = open_journal_file(path, create=False)
    assert file.size == 4
    file.write(b"d\n")
    file.close()
    assert path.read_bytes() == b"abc\nd\n"
    open_journal_file(path, create=True).close()
    assert path.read_bytes() == b""


# -- fault plans and the faulty twin -------------------------------------------------------------


def faulty(tmp_path: Path, *faults: Fault) -> FaultyJournalFile:
    return FaultyJournalFile(open_journal_file(tmp_path / "j", create=True), FaultPlan(faults))


def test_scripted_faults_hit_exactly_the_numbered_calls(tmp_path: Path) -> None:
    file = faulty(tmp_path, Fault(FaultOp.FSYNC, FaultKind.EIO, first=2, count=2))
    file.fdatasync()
    for _ in range(2):
        with pytest.raises(OSError, match="Input/output error") as caught:
            file.fdatasync()
        assert caught.value.errno == errno.EIO
    file.fdatasync()
    assert file.fdatasyncs == 4


def test_write_faults(tmp_path: Path) -> None:
    file = faulty(
        tmp_path,
        Fault(FaultOp.WRITE, FaultKind.SHORT, first=1),
        Fault(FaultOp.WRITE, FaultKind.ENOSPC, first=2),
        Fault(FaultOp.WRITE, FaultKind.EIO, first=3),
    )
    assert file.write(b"abcdef") == 3
    with pytest.raises(OSError) as full:
        file.write(b"def")
    assert full.value.errno == errno.ENOSPC
    with pytest.raises(OSError) as eio:
        file.write(b"def")
    assert eio.value.errno == errno.EIO
    assert file.write(b"def") == 3
    assert (file.writes, file.size) == (4, 6)
    assert (tmp_path / "j").read_bytes() == b"abcdef"


def test_arm_fails_the_next_calls_and_forever_means_forever(tmp_path: Path) -> None:
    file = faulty(tmp_path)
    file.truncate(0)
    file.plan.arm(FaultOp.TRUNCATE, FaultKind.EIO, times=None)
    for _ in range(5):
        with pytest.raises(OSError):
            file.truncate(0)
    file.plan.disarm()
    file.truncate(0)
    assert file.truncates == 7


def test_a_short_fault_only_applies_to_writes() -> None:
    with pytest.raises(ValueError, match="short is for writes"):
        Fault(FaultOp.FSYNC, FaultKind.SHORT)
    with pytest.raises(ValueError, match="start at 1"):
        Fault(FaultOp.FSYNC, FaultKind.EIO, first=0)


# -- the environment grammar -----------------------------------------------------------------------


def test_the_documented_examples_parse() -> None:
    assert parse_faults("fsync:eio@2") == [Fault(FaultOp.FSYNC, FaultKind.EIO, first=2, count=1)]
    assert parse_faults(" fsync:eio@2x3 ") == [
        Fault(FaultOp.FSYNC, FaultKind.EIO, first=2, count=3)
    ]
    assert parse_faults("write:short@2,write:enospc@3") == [
        Fault(FaultOp.WRITE, FaultKind.SHORT, first=2),
        Fault(FaultOp.WRITE, FaultKind.ENOSPC, first=3),
    ]
    assert parse_faults("s1/fsync:eio@2x*") == [
        Fault(FaultOp.FSYNC, FaultKind.EIO, first=2, count=None, session="s1")
    ]
    assert parse_faults("truncate:enospc") == [Fault(FaultOp.TRUNCATE, FaultKind.ENOSPC)]
    assert parse_faults("") == []


@pytest.mark.parametrize(
    "spec",
    [
        "fsync",
        "fsync:boom",
        "read:eio",
        "fsync:eio@",
        "fsync:eio@0",
        "fsync:eio@2x0",
        "fsync:short",
        "fsync:eio@1xq",
    ],
)
def test_bad_specs_are_refused_loudly(spec: str) -> None:
    with pytest.raises(ValueError, match=f"bad {FAULTS_ENV} rule"):
        parse_faults(spec)


def test_file_factory_is_the_real_one_without_the_variable(tmp_path: Path) -> None:
    assert file_factory({}) is open_journal_file
    assert file_factory({FAULTS_ENV: "  "}) is open_journal_file


def test_file_factory_gives_each_file_its_own_counts_and_honours_the_session(
    tmp_path: Path,
) -> None:
    factory = file_factory({FAULTS_ENV: "bad/fsync:eio@2x*,write:enospc@1"})
    for name in ("bad", "good"):
        (tmp_path / name).mkdir()
    bad_one = factory(tmp_path / "bad" / "journal.jsonl", create=True)
    bad_two = factory(tmp_path / "bad" / "other", create=True)
    good = factory(tmp_path / "good" / "journal.jsonl", create=True)
    for file in (bad_one, bad_two, good):
        with pytest.raises(OSError, match="No space left"):
            file.write(b"x")
        file.fdatasync()
    with pytest.raises(OSError, match="Input/output error"):
        bad_one.fdatasync()
    good.fdatasync()
