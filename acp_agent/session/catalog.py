"""Finding sessions on disk: ``session/list`` and ``acp-agent journal list``.

Listing must stay fast with thousands of sessions, so it never reads a journal past its header
line: ``cwd`` comes from the header, ``updatedAt`` from the journal file's mtime (every durable
append moves it; with the PostgreSQL store, the session row's ``updated_at``: the store's
``sessions()``, ``journal/store.py``), and the title from a tiny side file ``title`` written when the first direct
prompt of the session is admitted, and again when the model's title comes (``titles.py``).
It is a cache (the first-prompt title is derivable from the journal), so the side file is
written atomically but not fsynced: losing it loses nothing but a title. A title the
client set (unstable ``session/set_title``: ``set_client_title``) is not derivable: it is
fsynced, and the marker ``title.client`` says it is the client's, which no title the agent
makes may replace (``client_titled``). ``archived`` (the empty flag file ``shelf.py`` writes)
is one ``stat``.

Pages are ordered by ``updatedAt`` (newest first), then id; the cursor names the last item of the
previous page, so sessions updated while a client pages cannot make it skip or repeat others.
"""

from __future__ import annotations

import base64
import os
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path

import msgspec

from acp_agent.controls import without_controls
from acp_agent.journal.events import SessionHeader
from acp_agent.journal.files import fsync_dir
from acp_agent.journal.paths import session_dir
from acp_agent.journal.store import StoredSession, journal_store, keep_side_file

TITLE_FILE = "title"
CLIENT_TITLE_MARK = "title.client"
ARCHIVED_FILE = "archived"
PAGE_SIZE = 100

_HEADER = msgspec.json.Decoder(SessionHeader)


class SessionSummary(msgspec.Struct, frozen=True):
    session_id: str
    cwd: str
    updated_ns: int
    title: str | None
    archived: bool = False
    parent_session_id: str | None = None
    """The session whose subagent this one is (``subagents.py``'s side file)."""

    @property
    def updated_at(self) -> str:
        moment = datetime.fromtimestamp(self.updated_ns / 1e9, UTC)
        return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def key(self) -> tuple[int, str]:
        return (-self.updated_ns, self.session_id)


class BadCursor(ValueError):
    pass


def write_title(state_dir: Path, session_id: str, title: str) -> None:
    directory = session_dir(state_dir, session_id)
    tmp = directory / f".{TITLE_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, title.encode())
    finally:
        os.close(fd)
    os.replace(tmp, directory / TITLE_FILE)
    keep_side_file(directory, TITLE_FILE, title.encode())


def set_client_title(state_dir: Path, session_id: str, title: str) -> None:
    """The client's title for the session, durable once this returns, marked as the client's."""
    directory = session_dir(state_dir, session_id)
    tmp = directory / f".{TITLE_FILE}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, title.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.close(os.open(directory / CLIENT_TITLE_MARK, os.O_WRONLY | os.O_CREAT, 0o600))
    os.replace(tmp, directory / TITLE_FILE)
    fsync_dir(directory)
    keep_side_file(directory, CLIENT_TITLE_MARK, b"")
    keep_side_file(directory, TITLE_FILE, title.encode())


def client_titled(directory: Path) -> bool:
    """Whether the session's title is one the client set (never to be replaced by the agent)."""
    return (directory / CLIENT_TITLE_MARK).exists()


def read_title(directory: Path) -> str | None:
    try:
        title = (directory / TITLE_FILE).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return without_controls(title) or None  # a title an older version wrote may hold some


def summary(state_dir: Path, stored: StoredSession) -> SessionSummary | None:
    """One session's listing data from its header line, last change and title; None if the
    header is unreadable."""
    try:
        header = _HEADER.decode(stored.header_line)
    except msgspec.DecodeError:
        return None
    directory = session_dir(state_dir, stored.session_id)
    archived = stored.archived
    if archived is None:
        archived = (directory / ARCHIVED_FILE).exists()
    title = stored.title if stored.title is not None else read_title(directory)
    parent = _parent_of(directory)
    return SessionSummary(header.id, header.cwd, stored.updated_ns, title, archived, parent)


def _parent_of(directory: Path) -> str | None:
    """The parent named by a subagent's link file (``subagents.LINK_FILE``), if any."""
    try:
        raw = msgspec.json.decode((directory / "subagent.json").read_bytes())
    except (OSError, msgspec.DecodeError):
        return None
    parent = raw.get("parentSessionId") if isinstance(raw, dict) else None
    return parent if isinstance(parent, str) else None


def all_summaries(state_dir: Path) -> list[SessionSummary]:
    """Every session of the state dir's journal store (``journal/store.py``)."""
    found = []
    for stored in journal_store(state_dir).sessions():
        item = summary(state_dir, stored)
        if item is not None:
            found.append(item)
    return sorted(found, key=SessionSummary.key)


def encode_cursor(item: SessionSummary) -> str:
    return base64.urlsafe_b64encode(f"{item.updated_ns}:{item.session_id}".encode()).decode()


def decode_cursor(cursor: str) -> tuple[int, str]:
    try:
        updated, _, session_id = base64.urlsafe_b64decode(cursor.encode()).decode().partition(":")
        return (-int(updated), session_id)
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadCursor(f"invalid cursor {cursor!r}") from exc


class ArchiveFilter(StrEnum):
    """Unstable ``SessionArchiveFilter`` of ``session/list``."""

    EXCLUDE = "exclude"
    INCLUDE = "include"
    ONLY = "only"

    def keeps(self, item: SessionSummary) -> bool:
        return self is ArchiveFilter.INCLUDE or item.archived == (self is ArchiveFilter.ONLY)


def list_sessions(
    state_dir: Path,
    cwd: str | None = None,
    cursor: str | None = None,
    limit: int = PAGE_SIZE,
    archived: ArchiveFilter = ArchiveFilter.INCLUDE,
) -> tuple[list[SessionSummary], str | None]:
    """A page of sessions; ``archived`` says which archive states (the CLI lists them all)."""
    items = [
        s for s in all_summaries(state_dir) if (cwd is None or s.cwd == cwd) and archived.keeps(s)
    ]
    if cursor is not None:
        after = decode_cursor(cursor)
        items = [s for s in items if s.key() > after]
    page = items[:limit]
    more = len(items) > limit
    return page, encode_cursor(page[-1]) if more and page else None
