"""Where journals live, and the one check every session id passes before it touches a path."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Final

SESSION_ID_RE: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
JOURNAL_NAME: Final = "journal.jsonl"
LOCK_NAME: Final = "lock"
"""Per session: the pid of the process that holds the session (``lock.py``)."""
SHARED_LOCK_NAME: Final = "sessions.lock"
"""Per state dir, beside ``sessions/`` (which holds session directories only): the file whose
bytes lock the sessions (``lock.py``)."""
SESSIONS_DIR: Final = "sessions"
APP_DIR: Final = "acp-agent"


class InvalidSessionId(ValueError):
    """A session id that does not match ``SESSION_ID_RE`` (the ACP layer answers -32602)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"invalid session id {session_id!r}: expected {SESSION_ID_RE.pattern} (full match)"
        )
        self.session_id = session_id


def validate_session_id(session_id: str) -> str:
    if not SESSION_ID_RE.fullmatch(session_id):
        raise InvalidSessionId(session_id)
    return session_id


def session_dir(state_dir: Path, session_id: str) -> Path:
    """``<state_dir>/sessions/<id>``; the id is validated first."""
    return state_dir / SESSIONS_DIR / validate_session_id(session_id)


def shared_lock_path(directory: Path) -> Path:
    """``<state_dir>/sessions.lock``, for the session directory ``<state_dir>/sessions/<id>``."""
    return directory.parent.parent / SHARED_LOCK_NAME


def journal_path(directory: Path) -> Path:
    return directory / JOURNAL_NAME


def default_state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_STATE_HOME/acp-agent``, else ``~/.local/state/acp-agent``.

    Like the XDG spec says, an empty or relative ``XDG_STATE_HOME`` is ignored.
    """
    xdg = environ.get("XDG_STATE_HOME", "")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / APP_DIR
    home = environ.get("HOME") or str(Path.home())
    return Path(home) / ".local" / "state" / APP_DIR
