"""``/export [html|md]``: the session so far as one file, written under the state directory.

The file is ``<state-dir>/exports/<sessionId>-<UTC time>.html`` (or ``.md``): the state
directory, not the workspace, so an export never shows up in the user's repository or its
``git status``, and it holds what the journal holds (it is created 0600 in a 0700 directory,
like the journal). The answer names the file. What is exported is the session's history as it
stands when the command arrives: every admitted event, flushed or not, and a running turn as
far as it has gone (shown open). Like ``/status`` it is answered by the agent itself, with no
model request, and nothing is journaled.

``acp-agent journal export`` does the same from the command line (``journal_cli.py``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Final, Protocol

import anyio

from acp_agent.journal.events import Entry, SessionHeader

EXPORTS_DIR: Final = "exports"
FORMATS: Final = ("html", "md")


class ExportRefused(Exception):
    """``/export`` with an argument it does not take; the message says what it takes."""


class ExportSource(Protocol):
    """What ``/export`` reads of a session."""

    @property
    def header(self) -> SessionHeader: ...

    @property
    def entries(self) -> list[Entry]: ...

    @property
    def title(self) -> str | None: ...

    @property
    def state_dir(self) -> Path: ...


def export_path(state_dir: Path, session_id: str, suffix: str, now_ms: int) -> Path:
    """``<state-dir>/exports/<session>-<YYYYmmddTHHMMSS.mmm>Z<suffix>``."""
    moment = datetime.fromtimestamp(now_ms / 1000, UTC)
    stamp = moment.strftime("%Y%m%dT%H%M%S") + f".{now_ms % 1000:03d}Z"
    return state_dir / EXPORTS_DIR / f"{session_id}-{stamp}{suffix}"


async def export_session(session: ExportSource, rest: str) -> str:
    """Write the export ``rest`` asks for (``html``, the default, or ``md``); the answer text."""
    wanted = rest.strip().lower() or "html"
    if wanted not in FORMATS:
        raise ExportRefused(f"/export takes html or md, not {rest.strip()!r}")
    header, entries = session.header, session.entries
    path = export_path(session.state_dir, header.id, f".{wanted}", int(time.time() * 1000))
    write = partial(write_export, path, header, entries, wanted, session.title)
    written = await anyio.to_thread.run_sync(write)
    return f"Exported {len(entries)} events of session {header.id} to {written}"


def write_export(
    path: Path, header: SessionHeader, entries: Sequence[Entry], wanted: str, title: str | None
) -> Path:
    """Render and write the export at ``path`` (or beside it, if that name is taken)."""
    from acp_agent.export import Format, export_text
    from acp_agent.journal.files import make_private_dirs, write_private_file

    data = export_text(header, entries, Format(wanted), title=title).encode("utf-8", "replace")
    make_private_dirs(path.parent)
    for attempt in range(1, 100):
        target = path if attempt == 1 else path.with_stem(f"{path.stem}-{attempt}")
        try:
            write_private_file(target, data)
        except FileExistsError:
            continue
        return target
    raise FileExistsError(f"every name like {path} is taken")
