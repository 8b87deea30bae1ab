"""The session lock (``acp_agent/journal/lock.py``): one byte of a shared file per session.

A second open file description of ``<state>/sessions.lock`` stands in for another process where the
test only needs the kernel's answer: OFD locks of two descriptions conflict even within one
process (fcntl(2), "Open file description locks"). Real second processes are in
``test_writer.py`` and ``test_many_sessions.py``.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from acp_agent.journal import lock as locking
from acp_agent.journal.errors import JournalLocked
from acp_agent.journal.lock import SessionLock, current_holder
from acp_agent.journal.paths import SHARED_LOCK_NAME


@pytest.fixture
def sessions(tmp_path: Path) -> Path:
    path = tmp_path / "state" / "sessions"
    for sid in ("a", "b", "c"):
        (path / sid).mkdir(parents=True)
    return path


def descriptors_of(path: Path) -> list[int]:
    """This process's descriptors open on ``path``."""
    found = []
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == str(path):
                found.append(int(name))
        except OSError:
            continue
    return found


@contextmanager
def other_description(sessions: Path) -> Iterator[int]:
    fd = os.open(sessions.parent / SHARED_LOCK_NAME, os.O_RDWR | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def byte_free(fd: int, session_id: str) -> bool:
    """Can another description lock the session's byte right now? (It unlocks again.)"""
    offset = locking._offset(session_id)
    try:
        locking._set(fd, fcntl.F_WRLCK, offset)
    except BlockingIOError:
        return False
    locking._set(fd, fcntl.F_UNLCK, offset)
    return True


def test_all_sessions_of_a_state_dir_share_one_descriptor(sessions: Path) -> None:
    locks = [SessionLock.acquire(sessions / sid, sid) for sid in ("a", "b", "c")]
    assert len(descriptors_of(sessions.parent / SHARED_LOCK_NAME)) == 1
    for held in locks:
        held.release()
    assert descriptors_of(sessions.parent / SHARED_LOCK_NAME) == []  # closed with the last lock
    assert (sessions.parent / SHARED_LOCK_NAME).exists()  # and never deleted (lock.py)


def test_each_session_locks_its_own_byte_until_released(sessions: Path) -> None:
    a = SessionLock.acquire(sessions / "a", "a")
    b = SessionLock.acquire(sessions / "b", "b")
    with other_description(sessions) as fd:
        assert (byte_free(fd, "a"), byte_free(fd, "b"), byte_free(fd, "c")) == (False, False, True)
        a.release()
        assert (byte_free(fd, "a"), byte_free(fd, "b")) == (True, False)
        b.release()
        assert byte_free(fd, "b")


def test_the_holder_writes_its_pid_and_a_second_opener_here_is_refused(sessions: Path) -> None:
    held = SessionLock.acquire(sessions / "a", "a")
    assert (sessions / "a" / "lock").read_bytes() == b"%d\n" % os.getpid()
    with pytest.raises(JournalLocked) as caught:
        SessionLock.acquire(sessions / "a", "a")
    assert caught.value.holder_pid == os.getpid()
    assert current_holder(sessions / "a") == locking.Holder(os.getpid())
    held.release()
    assert current_holder(sessions / "a") is None
    SessionLock.acquire(sessions / "a", "a").release()


def test_a_byte_held_by_another_description_refuses_with_the_pid_it_wrote(
    sessions: Path,
) -> None:
    SessionLock.acquire(sessions / "a", "a").release()  # creates sessions.lock
    (sessions / "a" / "lock").write_bytes(b"4242\n")
    with other_description(sessions) as fd:
        locking._set(fd, fcntl.F_WRLCK, locking._offset("a"))
        with pytest.raises(JournalLocked, match=r"pid 4242;") as caught:
            SessionLock.acquire(sessions / "a", "a")
        assert caught.value.holder_pid == 4242
        assert current_holder(sessions / "a") == locking.Holder(4242)
        SessionLock.acquire(sessions / "b", "b").release()  # other sessions are unaffected
    assert (sessions / "a" / "lock").read_bytes() == b"4242\n"  # the loser wrote nothing


def test_ids_that_share_a_byte_do_not_unlock_each_other(
    sessions: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # lock.py: "within one process the byte is reference-counted"
    monkeypatch.setattr(locking, "_offset", lambda session_id: 7)
    a = SessionLock.acquire(sessions / "a", "a")
    b = SessionLock.acquire(sessions / "b", "b")
    with other_description(sessions) as fd:
        a.release()
        assert not byte_free(fd, "b")
        b.release()
        assert byte_free(fd, "b")


def test_a_holder_of_the_previous_per_session_flock_is_refused(sessions: Path) -> None:
    # The scheme before this one held flock(LOCK_EX) on <session>/lock while the session was open.
    path = sessions / "a" / "lock"
    path.write_bytes(b"777\n")
    fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(JournalLocked) as caught:
            SessionLock.acquire(sessions / "a", "a")
        assert caught.value.holder_pid == 777
        assert current_holder(sessions / "a") == locking.Holder(777)
    finally:
        os.close(fd)
    with other_description(sessions) as probe:
        assert byte_free(probe, "a")  # the refused acquire gave its byte back
    SessionLock.acquire(sessions / "a", "a").release()


def test_two_spellings_of_one_state_dir_are_one_table(sessions: Path, tmp_path: Path) -> None:
    link = tmp_path / "link"
    link.symlink_to(sessions.parent)
    held = SessionLock.acquire(sessions / "a", "a")
    with pytest.raises(JournalLocked):
        SessionLock.acquire(link / "sessions" / "a", "a")
    other = SessionLock.acquire(link / "sessions" / "b", "b")
    assert len(descriptors_of(sessions.parent / SHARED_LOCK_NAME)) == 1
    held.release()
    other.release()


def test_the_shared_lock_file_is_private(sessions: Path) -> None:
    old = os.umask(0)
    try:
        SessionLock.acquire(sessions / "a", "a").release()
    finally:
        os.umask(old)
    assert (sessions.parent / SHARED_LOCK_NAME).stat().st_mode & 0o777 == 0o600
    assert (sessions / "a" / "lock").stat().st_mode & 0o777 == 0o600
