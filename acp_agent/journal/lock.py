"""One writer per session, for every session of a state dir with one descriptor.

Theory of operation
-------------------
A session is locked by an exclusive OFD byte-range lock (``fcntl`` ``F_OFD_SETLK``, Linux) on
one byte of the shared file ``<state>/sessions.lock``, at an offset hashed from the session
id. OFD locks belong to an open file description, like ``flock``: the kernel drops them when the
description's last descriptor closes, including when the holder dies (kill -9), so there is no
stale lock to clean up. The file is never deleted (two openers could lock two different files).
A process keeps ONE description of the file per state dir (``_Table``), opened with its first
lock and closed with its last: 10,000 open sessions cost one descriptor, not 10,000. The
descriptor is close-on-exec, so tool subprocesses never inherit the locks.

A description never conflicts with itself, so a second writer *in this process* is refused by
the table's registry of held ids (under a thread lock: openers run in worker threads).

The holder's pid: OFD locks report none (``F_OFD_GETLK`` gives -1), so after locking, the holder
writes its pid into ``<session-dir>/lock`` (0600) and a refused opener reads it there. The write
happens under a brief exclusive ``flock`` of that file: the previous scheme held exactly that
``flock`` for as long as a session was open, so an older acp-agent holding the session is
refused too (the other way round it cannot see us: do not mix versions on one state dir).

Hash collisions: the offset is 62 bits of BLAKE2b of the id; two of 10,000 ids share a byte with
a probability near 10^-11. Across processes that is a false refusal (never two writers); within
one process the byte is reference-counted, so releasing one session does not unlock the other.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import struct
import threading
from collections import Counter
from pathlib import Path
from typing import Final

import msgspec

from acp_agent.journal.errors import JournalLocked
from acp_agent.journal.files import FILE_MODE
from acp_agent.journal.paths import LOCK_NAME, shared_lock_path

_FLOCK: Final = struct.Struct(
    "hhqqi4x"
)  # struct flock on 64-bit Linux: type, whence, start, len, pid


class _Table:
    """This process's description of one state dir's ``sessions.lock``, and what it holds there."""

    def __init__(self, key: str, path: Path, fd: int) -> None:
        self.key = key
        self.path = path
        self.fd = fd
        self.held: set[str] = set()
        self.bytes: Counter[int] = Counter()


_tables: dict[str, _Table] = {}
_guard = threading.Lock()


class SessionLock:
    def __init__(self, table: _Table, session_id: str, pid_path: Path) -> None:
        self._table: _Table | None = table
        self.session_id = session_id
        self.path = pid_path

    @classmethod
    def acquire(cls, directory: Path, session_id: str) -> SessionLock:
        """Lock the session in ``directory`` now, or raise ``JournalLocked`` at once."""
        pid_path = directory / LOCK_NAME
        table = _take(shared_lock_path(directory), session_id, pid_path)
        lock = cls(table, session_id, pid_path)
        try:
            _write_pid(pid_path, session_id)
        except BaseException:
            lock.release()
            raise
        return lock

    @property
    def held(self) -> bool:
        return self._table is not None

    def needs_check(self) -> bool:
        """Never: an OFD lock is held until released (``writer.Hold``)."""
        return False

    def verify(self) -> None:
        return None

    def release(self) -> None:
        table, self._table = self._table, None
        if table is not None:
            with _guard:
                _give_back(table, self.session_id)


def _take(shared: Path, session_id: str, pid_path: Path) -> _Table:
    offset = _offset(session_id)
    with _guard:
        table = _table(shared)
        if session_id in table.held:
            raise JournalLocked(session_id, pid_path, os.getpid())
        if not table.bytes[offset]:
            try:
                _set(table.fd, fcntl.F_WRLCK, offset)
            except (BlockingIOError, PermissionError):  # EAGAIN or EACCES: another holder
                _close_if_unused(table)
                raise JournalLocked(session_id, pid_path, _holder_pid(pid_path)) from None
            except BaseException:
                _close_if_unused(table)
                raise
        table.bytes[offset] += 1
        table.held.add(session_id)
        return table


def _give_back(table: _Table, session_id: str) -> None:
    offset = _offset(session_id)
    table.held.discard(session_id)
    table.bytes[offset] -= 1
    if table.bytes[offset] <= 0:
        del table.bytes[offset]
        _set(table.fd, fcntl.F_UNLCK, offset)
    _close_if_unused(table)


def _table(path: Path) -> _Table:
    key = os.path.realpath(path)
    table = _tables.get(key)
    if table is None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
        except BaseException:
            os.close(fd)
            raise
        table = _tables[key] = _Table(key, path, fd)
    return table


def _close_if_unused(table: _Table) -> None:
    if not table.held and _tables.get(table.key) is table:
        del _tables[table.key]
        os.close(table.fd)  # drops every lock of the description (there are none left)


def _offset(session_id: str) -> int:
    digest = hashlib.blake2b(session_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 2


def _set(fd: int, kind: int, offset: int) -> None:
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _FLOCK.pack(kind, os.SEEK_SET, offset, 1, 0))


def _write_pid(path: Path, session_id: str) -> None:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # an acp-agent of the per-session flock scheme holds it
            raise JournalLocked(session_id, path, _holder_pid(path)) from None
        line = b"%d\n" % os.getpid()
        os.pwrite(fd, line, 0)
        os.ftruncate(fd, len(line))
    finally:
        os.close(fd)  # drops the flock


class Holder(msgspec.Struct, frozen=True):
    pid: int | None
    """The pid the holder wrote, ``None`` if it cannot be read."""
    owner: str | None = None
    """A shared store's owner, ``host:pid`` (``postgres/store.py``); ``None`` for files."""


def current_holder(directory: Path) -> Holder | None:
    """Who holds the session's lock right now, or ``None`` when nobody does. Asks with
    ``F_OFD_GETLK`` (which takes nothing), then probes the previous scheme's ``flock`` with a
    shared, non-blocking ``flock`` released at once: a writer opening the session in that very
    instant is refused once and may retry."""
    pid_path = directory / LOCK_NAME
    if _byte_locked(shared_lock_path(directory), _offset(directory.name)):
        return Holder(_holder_pid(pid_path))
    try:
        fd = os.open(pid_path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return Holder(_holder_pid(pid_path))
    finally:
        os.close(fd)  # closing drops our shared lock, if we got it
    return None


def _byte_locked(path: Path, offset: int) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        query = _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, offset, 1, 0)
        kind, *_ = _FLOCK.unpack(fcntl.fcntl(fd, fcntl.F_OFD_GETLK, query))
    finally:
        os.close(fd)
    return bool(kind != fcntl.F_UNLCK)


def _holder_pid(path: Path) -> int | None:
    try:
        return int(path.read_bytes().strip() or b"x")
    except (OSError, ValueError):
        return None
