"""Forking a session: a new session whose journal starts with a prefix of another one's history.

Theory of operation
-------------------
A fork copies the parent's history up to a *stable boundary*: a seq after which the history
is between turns. Those are 0 (the empty history), every ``turn/end``, and every event outside
a turn — in practice an idle ``user/message``, which the design note makes committed history
and therefore a legitimate place to branch. A seq inside a turn is refused: the child would
start with an open turn that its first load closes as ``interrupted``, a turn that never ran
there. ``stable_boundaries`` (``journal/turns.py``, the turn grammar's one home) is the one
definition; ``boundary_problem`` only explains a miss.

The parent is *read*, never opened: the store's ``read`` takes no lock, so the parent may be live in
this process or another one. Only what is on disk counts; a damaged tail is ignored, as the
parent's next open moves it aside. The child is an ordinary session made by the store's
``create`` (``journal/store.py``: a file, or rows in PostgreSQL): header ``parent {sessionId, seq}``, the parent's cwd unless another is
given, and the parent's entries 1..seq appended with the same ``seq``, ``time`` and data, so the
copied events may predate the child's ``createdAt``. The copy is checked against the invariant
before anything is created, then made durable by one flush. The checkpoint trees the copied
``tool/result``s name get refs of the child's own in the shadow repositories.

A failure we see removes the half-made child. A crash is not atomic: the header is written
first (atomically), the history by one write + fdatasync; a crash in between leaves a child
holding a prefix of the copy (possibly an open turn, which its first load closes).
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import anyio

from acp_agent.checkpoints.plan import rewind_targets
from acp_agent.checkpoints.restore import Restore, prepare
from acp_agent.checkpoints.shadow import ShadowError, keep_for
from acp_agent.content import JsonObject, plain_text
from acp_agent.journal.errors import JournalCorrupt, JournalError, JournalExists
from acp_agent.journal.events import (
    Entry,
    Parent,
    SessionHeader,
    SourceKind,
    ToolResult,
    UserMessage,
    source_kind,
)
from acp_agent.journal.files import FileFactory
from acp_agent.journal.invariant import check
from acp_agent.journal.paths import journal_path, session_dir, validate_session_id
from acp_agent.journal.reader import ParsedJournal, parse_journal
from acp_agent.journal.store import JournalStore, journal_store
from acp_agent.journal.turns import (
    last_stable_boundary,
    span_open_at,
    spans,
    stable_boundaries as stable_boundaries,
)
from acp_agent.journal.writer import JournalWriter
from acp_agent.logs import get_logger
from acp_agent.session.catalog import write_title
from acp_agent.session.errors import FilesChanged, ForkRefused, RewindRefused
from acp_agent.session.settings import SessionSettings, load_settings, save_settings
from acp_agent.turn.ports import new_id as fresh_id, now_ms
from acp_agent.turn.titles import title_from

log = get_logger("acp_agent.sessions")


# -- boundaries (pure) --------------------------------------------------------------------------


def boundary_problem(entries: Sequence[Entry], seq: int) -> str | None:
    """Why ``seq`` is not a stable boundary of ``entries`` (``None``: it is one)."""
    if seq in stable_boundaries(entries):
        return None
    if seq < 0:
        return f"seq {seq} is negative (0 forks the empty history)"
    if seq > len(entries):
        return f"seq {seq} is past the end of the journal (last seq {len(entries)})"
    span = span_open_at(entries, seq)
    assert span is not None
    closed = f"turn/end at seq {span.end_seq}" if span.end_seq is not None else "no turn/end yet"
    return f"seq {seq} is inside turn {span.turn} (turn/start at seq {span.start_seq}, {closed})"


def fork_point(session_id: str, entries: Sequence[Entry], at_seq: int | None) -> int:
    """``at_seq`` if it is a stable boundary, else ``ForkRefused``; default the last one."""
    if at_seq is None:
        return last_stable_boundary(entries)
    problem = boundary_problem(entries, at_seq)
    if problem is not None:
        raise ForkRefused(session_id, at_seq, problem)
    return at_seq


def rewind_point(session_id: str, entries: Sequence[Entry], to_turn: int) -> int:
    """The boundary just before turn ``to_turn``'s ``turn/start`` (``_acp_agent/rewind``): the
    out-of-turn messages before it are kept, the turn and all after it are not. A turn the
    history does not have is ``RewindRefused``."""
    span = next((s for s in spans(entries) if s.turn == to_turn), None)
    if span is None:
        last = max((s.turn for s in spans(entries)), default=0)
        has = f"turns 1 to {last}" if last else "no turn yet"
        raise RewindRefused(session_id, to_turn, f"the session has {has}")
    return span.start_seq - 1


# -- files --------------------------------------------------------------------------------------


async def files_to_restore(state_dir: Path, parent_id: str, to_turn: int, force: bool) -> Restore:
    """The restore ``_acp_agent/rewind {restoreFiles: true}`` makes: every file the turns from
    ``to_turn`` on changed, back as before ``to_turn`` (``checkpoints/plan.py``); nothing is
    written yet. ``RewindRefused`` (no such turn); ``FilesChanged`` unless ``force`` when a file
    was changed since the agent last wrote it."""
    parent = await anyio.to_thread.run_sync(_read_parent, state_dir, parent_id)
    rewind_point(parent_id, parent.entries, to_turn)
    targets = rewind_targets(parent.entries, to_turn)
    restore = await anyio.to_thread.run_sync(prepare, state_dir, parent_id, targets)
    changed = restore.changed_since(Path(parent.header.cwd))
    if changed and not force:
        raise FilesChanged(parent_id, changed)
    return restore


# -- forking --------------------------------------------------------------------------------------


async def fork_session(
    state_dir: Path,
    parent_id: str,
    *,
    at_seq: int | None = None,
    at_turn: int | None = None,
    new_id: str | None = None,
    cwd: str | None = None,
    mcp_servers: list[JsonObject] | None = None,
    file_factory: FileFactory | None = None,
) -> SessionHeader:
    """Create a child of ``parent_id`` holding its history up to ``at_seq`` (or up to just
    before turn ``at_turn``: ``rewind_point``); return its header.

    Raises ``InvalidSessionId``, ``JournalNotFound`` / ``JournalCorrupt`` (the parent),
    ``ForkRefused`` (the fork point or the copied history), ``RewindRefused`` (no such turn)
    and ``JournalExists`` (the new id), all before anything is created.
    """
    child_id = validate_session_id(new_id) if new_id is not None else fresh_id()
    parent = await anyio.to_thread.run_sync(_read_parent, state_dir, parent_id)
    if at_turn is not None:
        at = rewind_point(parent_id, parent.entries, at_turn)
    else:
        at = fork_point(parent_id, parent.entries, at_seq)
    copied = parent.entries[:at]
    header = SessionHeader(
        id=child_id,
        created_at=now_ms(),
        cwd=cwd if cwd is not None else parent.header.cwd,
        parent=Parent(session_id=parent_id, seq=at),
        mcp_servers=mcp_servers if mcp_servers is not None else parent.header.mcp_servers,
    )
    _check_copy(parent_id, at, header, copied)
    directory = session_dir(state_dir, header.id)
    store = journal_store(state_dir)
    if directory.exists() or (
        store.shared and await anyio.to_thread.run_sync(store.exists, child_id)
    ):
        raise JournalExists(header.id, journal_path(directory))
    await _write_child(store, directory, header, copied, file_factory)
    await _keep_checkpoints(state_dir, header.id, copied)
    await _inherit_title(state_dir, header.id, copied)
    await _inherit_settings(state_dir, parent_id, header.id)
    log.info("session_forked", session_id=header.id, parent=parent_id, seq=at)
    return header


def _read_parent(state_dir: Path, parent_id: str) -> ParsedJournal:
    path = journal_path(session_dir(state_dir, parent_id))
    parsed = parse_journal(journal_store(state_dir).read(parent_id), path=path)
    if parsed.header.id != parent_id:
        reason = f"header names session {parsed.header.id!r}, not {parent_id!r}"
        raise JournalCorrupt(reason, offset=0, seq=None, path=path)
    return parsed


def _check_copy(parent_id: str, at: int, header: SessionHeader, copied: Sequence[Entry]) -> None:
    violations = check(header, copied)
    if violations:
        more = f" (and {len(violations) - 1} more)" if len(violations) > 1 else ""
        reason = f"the history up to it breaks the invariant: {violations[0]}{more}"
        raise ForkRefused(parent_id, at, reason)


async def _write_child(
    store: JournalStore,
    directory: Path,
    header: SessionHeader,
    copied: Sequence[Entry],
    file_factory: FileFactory | None,
) -> None:
    writer = await store.create(header, file_factory)
    try:
        for entry in copied:
            writer.append(entry)
        await writer.close()
    except BaseException:
        with anyio.CancelScope(shield=True):
            await _discard(store, writer, directory)
        raise


async def _discard(store: JournalStore, writer: JournalWriter, directory: Path) -> None:
    with suppress(JournalError):
        await writer.close()
    if store.shared:
        with suppress(JournalError, OSError):
            await anyio.to_thread.run_sync(store.delete, writer.session_id)
    await anyio.to_thread.run_sync(shutil.rmtree, directory, True)
    log.warning("session_fork_discarded", session_id=writer.session_id)


async def _keep_checkpoints(state_dir: Path, session_id: str, copied: Sequence[Entry]) -> None:
    """The child's own refs to the checkpoint trees its copied events name (``checkpoints/``)."""
    found = [c for e in copied if isinstance(e.event, ToolResult) for c in e.event.checkpoints]
    if not found:
        return
    try:
        await anyio.to_thread.run_sync(keep_for, state_dir, session_id, found)
    except (ShadowError, OSError) as exc:  # the parent's refs still keep them
        log.warning("checkpoint_refs_not_copied", session_id=session_id, error=str(exc))


async def _inherit_title(state_dir: Path, session_id: str, copied: Sequence[Entry]) -> None:
    """Title the child like its history's first direct prompt titled the parent."""
    prompt = next((e.event for e in copied if _is_direct_prompt(e)), None)
    if not isinstance(prompt, UserMessage):
        return
    title = title_from(plain_text(prompt.content)) or "untitled"
    try:
        await anyio.to_thread.run_sync(write_title, state_dir, session_id, title)
    except OSError as exc:  # a lost title loses nothing else
        log.warning("session_title_not_written", session_id=session_id, error=str(exc))


async def _inherit_settings(state_dir: Path, parent_id: str, session_id: str) -> None:
    """The child starts in the parent's mode, on its model (``session/settings.py``)."""
    settings = await load_settings(state_dir, parent_id)
    if settings != SessionSettings():
        await save_settings(state_dir, session_id, settings)  # failed: the child has defaults


def _is_direct_prompt(entry: Entry) -> bool:
    event = entry.event
    return isinstance(event, UserMessage) and source_kind(event.source) == SourceKind.USER
