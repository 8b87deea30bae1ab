"""A session's place on disk beyond its journal: deleting it, archiving it, asking after it.

The journal itself is the store's (``journal/store.py``); what follows is the ``file`` store's
own way of deleting (``journal/filestore.py`` does it). A PostgreSQL session is deleted by one
transaction (its rows), then this host's side-file directory is removed.

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
from pathlib import Path

from acp_agent.journal.errors import JournalLeased, JournalLocked
from acp_agent.journal.files import FILE_MODE, fsync_dir, make_private_dirs
from acp_agent.journal.filestore import TOMBSTONE_PREFIX, sweep_tombstones
from acp_agent.journal.paths import session_dir
from acp_agent.journal.store import journal_store, keep_side_file
from acp_agent.logs import get_logger
from acp_agent.session.catalog import ARCHIVED_FILE
from acp_agent.session.errors import IdRole, SessionUnavailable, UnknownSession
from acp_agent.session.opening import checked_id

log = get_logger("acp_agent.sessions")

__all__ = ["TOMBSTONE_PREFIX", "delete_session", "existing_dir", "set_archived", "sweep_tombstones"]


def existing_dir(state_dir: Path, session_id: str) -> Path:
    """The directory of a session in the store (one with a journal); ``UnknownSession`` else.
    With a shared store the directory (side files only) is made here when this host has none."""
    directory = session_dir(state_dir, checked_id(session_id, IdRole.EXISTING))
    store = journal_store(state_dir)
    try:
        known = store.exists(session_id)
    except OSError as exc:
        raise SessionUnavailable(session_id, exc) from exc
    if not known:
        raise UnknownSession(session_id)
    if store.shared:
        make_private_dirs(directory)
    return directory


def delete_session(state_dir: Path, session_id: str) -> None:
    """Remove the session from its store, durably (``JournalStore.delete``; files: see the
    module docstring). ``UnknownSession``; ``SessionUnavailable`` when another process holds
    it or the store cannot be reached."""
    existing_dir(state_dir, session_id)
    try:
        journal_store(state_dir).delete(session_id)
    except (JournalLocked, OSError) as exc:
        raise SessionUnavailable(session_id, exc) from exc
    log.info("session_deleted", session_id=session_id)


def set_archived(directory: Path, archived: bool) -> None:
    """Write or remove the ``archived`` flag, durably; setting it twice is no change."""
    flag = directory / ARCHIVED_FILE
    keep_side_file(directory, ARCHIVED_FILE, b"" if archived else None)
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
    store = journal_store(directory.parent.parent)
    try:
        holder = store.holder(session_id)
    except OSError as exc:
        raise SessionUnavailable(session_id, exc) from exc
    if holder is not None and holder.owner is not None:
        raise SessionUnavailable(session_id, JournalLeased(session_id, holder.owner, store.label))
    if holder is not None:
        locked = JournalLocked(session_id, directory / "lock", holder.pid)
        raise SessionUnavailable(session_id, locked)
