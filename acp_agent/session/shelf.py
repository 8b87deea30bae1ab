"""A session's place on disk beyond its journal: deleting it, archiving it, asking after it.

Theory of operation
-------------------
A session is its directory ``<state>/sessions/<id>``: the journal, the ``lock`` file, the side
files (``title``, ``title.client``, ``settings.json``, ``archived``, torn tails moved aside).
Deleting it must be all or nothing for every reader (``session/list``, a ``session/load`` in
another process), and durable. So ``delete_session`` takes the session's lock (a session open
in another process is refused, naming its pid; one open in this process is closed by the
caller first), *renames* the directory to a tombstone ``sessions/.deleted-<id>-<random>`` (one
atomic step: the id is gone for every reader, and a name starting with ``.`` is no session id,
so nothing lists it), fsyncs ``sessions/`` (the removal is durable once it returns), releases
the lock and removes the tombstone. A crash before the rename leaves the session whole; after
it, at worst a tombstone, which the next delete sweeps away.

Archiving is a flag, the empty side file ``archived``: written (``fsync``, then the directory's)
or removed (then the directory's ``fsync``) before the answer, so the state survives a crash.
``session/list`` reads it with one ``stat`` per session.

Every function here blocks (file system calls): call them through ``anyio.to_thread``.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import structlog

from acp_agent.journal.errors import JournalLocked
from acp_agent.journal.files import FILE_MODE, fsync_dir
from acp_agent.journal.lock import SessionLock, current_holder
from acp_agent.journal.paths import journal_path, session_dir
from acp_agent.session.catalog import ARCHIVED_FILE
from acp_agent.session.errors import IdRole, SessionUnavailable, UnknownSession
from acp_agent.session.opening import checked_id

log = structlog.get_logger("acp_agent.sessions")

TOMBSTONE_PREFIX = ".deleted-"


def existing_dir(state_dir: Path, session_id: str) -> Path:
    """The directory of a session on disk (one with a journal); ``UnknownSession`` else."""
    directory = session_dir(state_dir, checked_id(session_id, IdRole.EXISTING))
    if not journal_path(directory).is_file():
        raise UnknownSession(session_id)
    return directory


def delete_session(state_dir: Path, session_id: str) -> None:
    """Remove the session from disk, durably (see the module docstring). ``UnknownSession``;
    ``SessionUnavailable`` when another process holds it."""
    directory = existing_dir(state_dir, session_id)
    sessions = directory.parent
    try:
        lock = SessionLock.acquire(directory, session_id)
    except JournalLocked as exc:
        raise SessionUnavailable(session_id, exc) from exc
    tombstone = sessions / f"{TOMBSTONE_PREFIX}{session_id}-{uuid.uuid4().hex[:8]}"
    try:
        os.rename(directory, tombstone)
        fsync_dir(sessions)
    finally:
        lock.release()
    log.info("session_deleted", session_id=session_id)
    sweep_tombstones(sessions)


def sweep_tombstones(sessions: Path) -> None:
    """Remove what deletes left behind (this one's, and any a crash cut short)."""
    import shutil  # here: with bz2 and lzma, ~3 ms of a fresh process's first session/new

    for name in os.listdir(sessions):
        if name.startswith(TOMBSTONE_PREFIX):
            shutil.rmtree(sessions / name, ignore_errors=True)
    fsync_dir(sessions)


def set_archived(directory: Path, archived: bool) -> None:
    """Write or remove the ``archived`` flag, durably; setting it twice is no change."""
    flag = directory / ARCHIVED_FILE
    if archived:
        fd = os.open(flag, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    else:
        try:
            flag.unlink()
        except FileNotFoundError:
            return
    fsync_dir(directory)


def refuse_if_held(directory: Path, session_id: str) -> None:
    """``SessionUnavailable`` (journal_locked) when another process has the session open."""
    holder = current_holder(directory)
    if holder is not None:
        locked = JournalLocked(session_id, directory / "lock", holder.pid)
        raise SessionUnavailable(session_id, locked)
