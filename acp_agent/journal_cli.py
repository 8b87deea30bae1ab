"""``acp-agent journal ...``: journal tools for people and scripts.

Every action works on the state dir's journal store (``--journal-store``: files, or PostgreSQL;
``journal/store.py``). ``list``, ``show``, ``query`` and ``check`` only read: they take no session lock and write
nothing, so they are safe on a session a server is running (they see what is on disk). A damaged
tail is reported on stderr and left out, as the session's next open would move it aside.
``fork`` creates a new session (``session/fork.py``) and prints its id.

Output is for people by default and JSON lines with ``--json``: ``show`` and ``query`` then print
the journal's own lines byte for byte (envelope and checksum as written), ``list`` the objects
``session/list`` returns.

Exit codes: 0 done; 1 the journal is damaged (``check``: or breaks the invariant); 2 a usage
error — an invalid or unknown session id, a seq that is no fork point (argparse exits 2 on bad
flags as well).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import anyio
import msgspec

from acp_agent import logs
from acp_agent.acp.schema import SessionInfo
from acp_agent.config_file import ConfigError, read_config_file
from acp_agent.content import plain_text
from acp_agent.journal.errors import JournalError, JournalNotFound
from acp_agent.journal.events import (
    AgentError,
    AssistantMessage,
    AssistantPart,
    Compaction,
    Entry,
    Event,
    SessionHeader,
    SteeringMessage,
    TextPart,
    ThoughtPart,
    ToolCall,
    ToolResult,
    TurnEnd,
    UnknownEvent,
    UserMessage,
    source_kind,
)
from acp_agent.journal.invariant import Violation, check_journal
from acp_agent.journal.paths import SESSIONS_DIR, InvalidSessionId, journal_path, session_dir
from acp_agent.journal.reader import parse_journal
from acp_agent.journal.store import journal_store
from acp_agent.journal.store_choice import choose_store
from acp_agent.journal.turns import enclosing_turns
from acp_agent.options import Options
from acp_agent.progress import progress
from acp_agent.session.catalog import all_summaries
from acp_agent.session.errors import ForkRefused
from acp_agent.session.fork import fork_session

PREVIEW_CHARS = 72

Command = Callable[[argparse.Namespace, Options], int]


class UsageError(Exception):
    """A request the user can fix (exit 2)."""


def run_journal_command(args: argparse.Namespace, options: Options) -> int:
    logs.configure(options.log_level, options.log_file)
    try:
        config = read_config_file(options.config)
        choose_store(options.state_dir, options.journal_store, config, options.config)
    except ConfigError as exc:
        logs.shutdown()
        return _fail(str(exc), 2)
    try:
        return _run(JOURNAL_COMMANDS[args.journal_command], args, options)
    finally:
        logs.shutdown()


def _run(command: Command, args: argparse.Namespace, options: Options) -> int:
    try:
        code = command(args, options)
        sys.stdout.flush()  # a closed pipe shows here, not at exit
        return code
    except UsageError as exc:
        return _fail(str(exc), 2)
    except JournalError as exc:
        return _fail(str(exc), 1)
    except BrokenPipeError:  # `... | head`: the reader has all it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        return _fail(f"cannot read the journal: {exc}", 1)


def _fail(message: str, code: int) -> int:
    print(f"acp-agent: {message}", file=sys.stderr)
    return code


def _existing_session(state_dir: Path, session_id: str) -> Path:
    """The session's directory; ``UsageError`` when its store (``journal/store.py``) has no
    such session. A file journal's directory alone counts, as it always did."""
    try:
        directory = session_dir(state_dir, session_id)
    except InvalidSessionId as exc:
        raise UsageError(str(exc)) from exc
    store = journal_store(state_dir)
    if not (store.exists(session_id) if store.shared else directory.is_dir()):
        where = store.label if store.shared else str(state_dir)
        raise UsageError(f"no session {session_id!r} under {where}")
    return directory


# -- check ----------------------------------------------------------------------------------------


def _check(args: argparse.Namespace, options: Options) -> int:
    if args.session_id is not None:
        return _check_one(args.session_id, _existing_session(options.state_dir, args.session_id))
    sessions = _every_session(options.state_dir)
    failed = 0
    with progress("check", len(sessions), unit="session", long_from=2) as bar:
        for session_id, directory in sessions:
            bar.describe(session_id)
            failed += _check_one(session_id, directory)
            bar.advance()
    if not sessions:
        print(f"no session under {options.state_dir}")
    return 1 if failed else 0


def _check_one(session_id: str, directory: Path) -> int:
    try:
        data = journal_store(directory.parent.parent).read(session_id)
        violations = check_journal(data, journal_path(directory))
    except (JournalNotFound, OSError) as exc:
        violations = [Violation(None, f"cannot read journal: {exc}")]
    for violation in violations:
        print(f"{session_id}: {violation}")
    if not violations:
        print(f"{session_id}: ok")
    return 1 if violations else 0


def _every_session(state_dir: Path) -> list[tuple[str, Path]]:
    """Every session directory under ``state_dir`` (by id), whatever its journal holds; of a
    shared store (PostgreSQL), every session it holds."""
    store = journal_store(state_dir)
    if store.shared:
        ids = sorted(s.session_id for s in store.sessions())
        return [(name, session_dir(state_dir, name)) for name in ids]
    root = state_dir / SESSIONS_DIR
    try:
        names = sorted(entry.name for entry in root.iterdir() if entry.is_dir())
    except FileNotFoundError:
        return []
    found = []
    for name in names:
        try:
            found.append((name, session_dir(state_dir, name)))
        except InvalidSessionId:
            continue  # not a session directory of ours
    return found


# -- list -----------------------------------------------------------------------------------------

_encoder = msgspec.json.Encoder()


def _list(args: argparse.Namespace, options: Options) -> int:
    for item in all_summaries(options.state_dir):
        if args.json:
            info = SessionInfo(item.session_id, item.cwd, item.title, item.updated_at)
            sys.stdout.buffer.write(_encoder.encode(info) + b"\n")
        else:
            print(f"{item.session_id}  {item.updated_at}  {item.cwd}  {item.title or '-'}")
    return 0


# -- show and query -------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Journal:
    header: SessionHeader
    header_line: bytes
    entries: list[Entry]
    lines: list[bytes]
    """The raw line of each entry, as written (without its newline)."""


def _read(state_dir: Path, session_id: str) -> _Journal:
    path = journal_path(_existing_session(state_dir, session_id))
    data = journal_store(state_dir).read(session_id)
    parsed = parse_journal(data, path=path)
    if parsed.tail is not None:
        tail = parsed.tail
        where = f"seq {tail.seq}, byte {tail.offset}, {tail.length} bytes"
        print(
            f"acp-agent: {session_id}: ignoring a damaged tail ({where}): {tail.reason}",
            file=sys.stderr,
        )
    header_line, *lines = data[: parsed.size].split(b"\n")[:-1]
    return _Journal(parsed.header, header_line, parsed.entries, lines)


def _show(args: argparse.Namespace, options: Options) -> int:
    journal = _read(options.state_dir, args.session_id)
    if args.json:
        _write_lines([journal.header_line, *journal.lines])
        return 0
    print(_describe_header(journal.header, len(journal.entries)))
    _print_rows(journal.entries, range(len(journal.entries)))
    return 0


def _query(args: argparse.Namespace, options: Options) -> int:
    journal = _read(options.state_dir, args.session_id)
    turns = enclosing_turns(journal.entries)
    wanted = partial(_matches, types=args.type, kind=args.source_kind, turn=args.turn)
    chosen = [i for i, entry in enumerate(journal.entries) if wanted(entry, turns[i])]
    if args.json:
        _write_lines([journal.lines[i] for i in chosen])
    else:
        _print_rows(journal.entries, chosen, turns)
    return 0


def _matches(
    entry: Entry,
    in_turn: int | None,
    *,
    types: list[str] | None,
    kind: str | None,
    turn: int | None,
) -> bool:
    if types and entry.type not in types:
        return False
    if kind is not None and _source_kind(entry.event) != kind:
        return False
    return turn is None or in_turn == turn


def _source_kind(event: Event) -> str | None:
    if isinstance(event, UserMessage | SteeringMessage):
        return source_kind(event.source)
    return None


def _write_lines(lines: Sequence[bytes]) -> None:
    out = sys.stdout.buffer
    for line in lines:
        out.write(line + b"\n")
    out.flush()


# -- the readable form ----------------------------------------------------------------------------


def _describe_header(header: SessionHeader, events: int) -> str:
    rows = [f"session {header.id}", f"created {_time(header.created_at)}", f"cwd     {header.cwd}"]
    if header.parent is not None:
        rows.append(f"parent  {header.parent.session_id} at seq {header.parent.seq}")
    rows.append(f"events  {events}")
    return "\n".join(rows)


def _print_rows(
    entries: Sequence[Entry], indexes: Sequence[int], turns: list[int | None] | None = None
) -> None:
    turns = turns if turns is not None else enclosing_turns(entries)
    for i in indexes:
        entry = entries[i]
        where = _coordinates(entry.event, turns[i])
        row = f"{entry.seq:>6}  {_time(entry.time)}  {entry.type:<18} {where:<15} "
        print((row + _summary(entry.event)).rstrip())


def _time(ms: int) -> str:
    moment = datetime.fromtimestamp(ms / 1000, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _coordinates(event: Event, turn: int | None) -> str:
    step = getattr(event, "step", None)
    if turn is None:
        return "-"
    return f"turn {turn}" if step is None else f"turn {turn} step {step}"


def _summary(event: Event) -> str:
    match event:
        case (
            UserMessage(content=content, source=src) | SteeringMessage(content=content, source=src)
        ):
            return f"[{source_kind(src) or '?'}] {_preview(plain_text(content))}"
        case AssistantMessage(content=parts):
            return "; ".join(_part(part) for part in parts)
        case ToolCall(call_id=call_id, name=name, arguments=arguments):
            return f"{call_id} {name} {_clip(json.dumps(arguments, ensure_ascii=False))}"
        case ToolResult(call_id=call_id, content=content, is_error=is_error):
            status = "error" if is_error else "ok"
            return f"{call_id} {status} {_preview(plain_text(content))}"
        case TurnEnd(reason=reason):
            return reason.kind if reason.message is None else f"{reason.kind}: {reason.message}"
        case AgentError(error=error):
            return _preview(error.message)
        case Compaction(summary=summary, through_seq=through, reason=reason):
            return f"{reason}, through seq {through}: {_preview(plain_text(summary))}"
        case UnknownEvent(data=data):
            return _preview(bytes(data).decode("utf-8", "replace"))
        case _:
            return ""


def _part(part: AssistantPart) -> str:
    match part:
        case TextPart(text=text):
            return _preview(text)
        case ThoughtPart(text=text):
            return f"thought {_preview(text)}"
        case _:
            return f"calls {part.name} ({part.id})"


def _preview(text: str) -> str:
    """Some text on one short line, quoted."""
    return json.dumps(_clip(text), ensure_ascii=False)


def _clip(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[: PREVIEW_CHARS - 1] + "…"


# -- export -------------------------------------------------------------------------------------


def _export(args: argparse.Namespace, options: Options) -> int:
    """The session as one HTML page (or Markdown): to ``-o FILE``, else to stdout."""
    from acp_agent.export import Format, export_text
    from acp_agent.session.catalog import read_title

    journal = _read(options.state_dir, args.session_id)
    title = read_title(_existing_session(options.state_dir, args.session_id))
    fmt = Format(args.format)
    text = export_text(journal.header, journal.entries, fmt, title=title)
    data = text.encode("utf-8", "replace")
    if args.output is None or str(args.output) == "-":
        sys.stdout.buffer.write(data)
        return 0
    try:
        args.output.write_bytes(data)
    except OSError as exc:
        raise UsageError(f"cannot write {args.output}: {exc.strerror or exc}") from exc
    print(f"{args.session_id}: wrote {args.output}", file=sys.stderr)
    return 0


# -- fork -----------------------------------------------------------------------------------------


def _fork(args: argparse.Namespace, options: Options) -> int:
    _existing_session(options.state_dir, args.session_id)
    fork = partial(fork_session, options.state_dir, args.session_id, at_seq=args.at)
    try:
        header = anyio.run(fork)
    except ForkRefused as exc:
        raise UsageError(str(exc)) from exc
    print(header.id)
    return 0


# -- compact --------------------------------------------------------------------------------------


def _compact(args: argparse.Namespace, options: Options) -> int:
    """What ``/compact`` does, without a server: the session's model summarizes its history."""
    from acp_agent.api import compact_session
    from acp_agent.config_file import ConfigError
    from acp_agent.model.config import load_providers
    from acp_agent.model.registry import BadModelSpec, make_model
    from acp_agent.session.errors import SessionError
    from acp_agent.turn.vocabulary import Failed, Finished

    _existing_session(options.state_dir, args.session_id)
    try:
        model = make_model(options.model, load_providers(options.config))
    except (BadModelSpec, ConfigError) as exc:
        raise UsageError(str(exc)) from exc
    run = partial(
        compact_session,
        options.state_dir,
        args.session_id,
        model,
        instructions=args.instructions or "",
        context_window=options.context_window,
    )
    try:
        outcome = anyio.run(run)
    except SessionError as exc:  # locked by a running server, unreadable journal
        return _fail(str(exc), 1)
    if isinstance(outcome, Failed):
        return _fail(f"compaction failed: {outcome.message}", 1)
    assert isinstance(outcome, Finished)
    print(f"{args.session_id}: compacted")
    return 0


JOURNAL_COMMANDS: dict[str, Command] = {
    "check": _check,
    "list": _list,
    "show": _show,
    "query": _query,
    "fork": _fork,
    "export": _export,
    "compact": _compact,
}
