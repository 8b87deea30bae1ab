"""Every session journal under ``<state-dir>/sessions``, read without changing anything.

Per session, one finding per problem: a corrupt line inside the history (the session cannot be
opened), a damaged tail (the next open moves it aside), invariant violations, side files
``journal.tail.*`` that an earlier recovery left for inspection, a missing journal. A session
whose lock a running process holds is a note, not a problem: its newest events may still be in
that process's memory, so an open final turn or an incomplete last line is expected there. The
healthy ones are counted on one line.

The lock is probed by ``journal.lock.current_holder`` (``F_OFD_GETLK`` on the session's byte of
``<state>/sessions.lock``, which takes nothing, then a shared, non-blocking ``flock`` of the previous
scheme released at once: a server opening that very session in the same instant is refused once).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

from acp_agent.doctor.report import Finding, Section, Status
from acp_agent.journal.errors import JournalCorrupt
from acp_agent.journal.invariant import check
from acp_agent.journal.lock import current_holder
from acp_agent.journal.opening import TAIL_PREFIX
from acp_agent.journal.paths import JOURNAL_NAME, SESSION_ID_RE, SESSIONS_DIR, session_dir
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.recovery import interrupted_turn_repair
from acp_agent.journal.store import JournalStore, journal_store


def journals_section(state_dir: Path) -> Section:
    store = journal_store(state_dir)
    if store.shared:
        return shared_section(state_dir, store)
    sessions = state_dir / SESSIONS_DIR
    try:
        directories = sorted(p for p in sessions.iterdir() if p.is_dir())
    except FileNotFoundError:
        directories = []
    except OSError as exc:
        problem = Finding(Status.PROBLEM, "journal.unreadable", f"cannot list {sessions}: {exc}")
        return Section("journals", "journals", [problem])
    findings: list[Finding] = []
    healthy = 0
    for directory in directories:
        found = list(_session(directory))
        findings += found
        healthy += not any(f.status is Status.PROBLEM for f in found)
    summary = f"{healthy} of {len(directories)} journals healthy"
    status = Status.OK if healthy == len(directories) else Status.NOTE
    findings.append(Finding(status, "journal.summary", summary if directories else "no sessions"))
    return Section("journals", "journals", findings)


def _session(directory: Path) -> Iterator[Finding]:
    session_id = directory.name
    if not SESSION_ID_RE.fullmatch(session_id):
        yield Finding(
            Status.NOTE, "journal.stray", "not a session directory (invalid id)", session_id
        )
        return
    holder = locked_by(directory)
    if holder is not None:
        yield Finding(Status.NOTE, "journal.locked", f"in use by {holder}", session_id)
    yield from _side_files(directory, session_id)
    path = directory / JOURNAL_NAME
    if not path.is_file():
        yield Finding(Status.PROBLEM, "journal.missing", f"no {JOURNAL_NAME}", session_id)
        return
    yield from _contents(path, session_id, live=holder is not None)


def _side_files(directory: Path, session_id: str) -> Iterator[Finding]:
    tails = sorted(p.name for p in directory.glob(f"{TAIL_PREFIX}*"))
    if tails:
        message = (
            f"{len(tails)} damaged tail{'s' if len(tails) > 1 else ''} moved aside by an earlier "
            f"recovery ({', '.join(tails)}): inspect, then delete"
        )
        yield Finding(Status.PROBLEM, "journal.side_files", message, session_id)


def _contents(
    path: Path, session_id: str, *, live: bool, read: Callable[[], bytes] | None = None
) -> Iterator[Finding]:
    """``read``: where the journal's bytes come from (a shared store's ``read``); the file at
    ``path`` by default."""
    try:
        parsed = parse_journal(read() if read is not None else path.read_bytes(), path=path)
    except JournalCorrupt as exc:
        where = f"seq {exc.seq}" if exc.seq is not None else "the header"
        message = (
            f"corrupt at byte {exc.offset} ({where}): {exc.reason}; the session cannot be "
            "opened until the file is repaired"
        )
        yield Finding(Status.PROBLEM, "journal.corrupt", message, session_id)
        return
    except OSError as exc:
        yield Finding(Status.PROBLEM, "journal.unreadable", f"cannot read: {exc}", session_id)
        return
    if parsed.tail is not None:
        yield _tail(parsed.tail.offset, parsed.tail.length, parsed.tail.reason, session_id, live)
    violations = check(parsed.header, parsed.entries, allow_open_tail=True)
    if violations:
        count = len(violations)
        message = f"{count} invariant violation{'s' if count > 1 else ''}; first: {violations[0]}"
        yield Finding(Status.PROBLEM, "journal.invariant", message, session_id)
    elif not live and interrupted_turn_repair(parsed.entries):
        message = "the last turn was cut off; the next load closes it as interrupted"
        yield Finding(Status.NOTE, "journal.open_turn", message, session_id)


def _tail(offset: int, length: int, reason: str, session_id: str, live: bool) -> Finding:
    if live:
        message = f"last line incomplete at byte {offset} (being written?)"
        return Finding(Status.NOTE, "journal.tail", message, session_id)
    message = (
        f"damaged tail at byte {offset} ({length} bytes): {reason}; the next open moves it "
        f"aside to {TAIL_PREFIX}*"
    )
    return Finding(Status.PROBLEM, "journal.tail", message, session_id)


def locked_by(directory: Path) -> str | None:
    """Who holds the session lock (``"pid N"``), or ``None`` when nobody does."""
    holder = current_holder(directory)
    if holder is None:
        return None
    return f"pid {holder.pid}" if holder.pid is not None else "a running process"


def shared_section(state_dir: Path, store: JournalStore) -> Section:
    """The journals of a shared store (PostgreSQL): every session any host wrote there."""
    try:
        stored = sorted(s.session_id for s in store.sessions())
    except OSError as exc:
        problem = Finding(Status.PROBLEM, "journal.store_unreachable", str(exc))
        return Section("journals", "journals", [problem])
    where = Finding(Status.OK, "journal.store", f"journal store {store.label}")
    findings: list[Finding] = [where]
    healthy = 0
    for session_id in stored:
        found = list(_stored(state_dir, store, session_id))
        findings += found
        healthy += not any(f.status is Status.PROBLEM for f in found)
    summary = f"{healthy} of {len(stored)} journals healthy" if stored else "no sessions"
    status = Status.OK if healthy == len(stored) else Status.NOTE
    findings.append(Finding(status, "journal.summary", summary))
    return Section("journals", "journals", findings)


def _stored(state_dir: Path, store: JournalStore, session_id: str) -> Iterator[Finding]:
    try:
        holder = store.holder(session_id)
    except OSError as exc:
        yield Finding(Status.PROBLEM, "journal.unreadable", f"cannot read: {exc}", session_id)
        return
    if holder is not None:
        by = holder.owner or "a running process"
        yield Finding(Status.NOTE, "journal.locked", f"in use by {by}", session_id)
    path = session_dir(state_dir, session_id) / JOURNAL_NAME
    read = partial(store.read, session_id)
    yield from _contents(path, session_id, live=holder is not None, read=read)
