"""What the session layer refuses, as plain exceptions: no wire codes, no JSON paths.

Every front door maps them to its own words: the ACP router through ``acp/failures.py`` (codes,
``data.reason``, the path of the offending parameter), the CLI to an exit status and a line on
stderr, the Python API hands them to the caller as they are. A session id that is refused says
which id it was (``IdRole``), so a front door can point at the parameter that carried it.
"""

from __future__ import annotations

import errno
import os
import resource
from enum import StrEnum

from acp_agent.journal.errors import (
    JournalError,
    JournalLeased,
    JournalLocked,
    JournalStoreDown,
    JournalTakenOver,
)
from acp_agent.model.registry import KeyNeeded


class SessionError(Exception):
    """Something a session operation refuses; the message is meant for the person."""


class IdRole(StrEnum):
    """Which session id an operation was given: one to open, or one asked for a new session."""

    EXISTING = "existing"
    REQUESTED = "requested"


class UnknownSession(SessionError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"unknown session {session_id!r}")
        self.session_id = session_id


class BadSessionId(SessionError):
    """Not a valid session id (``journal/paths.py`` says what is)."""

    def __init__(self, message: str, session_id: str, role: IdRole) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.role = role


class SessionIdInUse(SessionError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session id {session_id!r} is already in use")
        self.session_id = session_id


class SessionUnavailable(SessionError):
    """A session exists on disk but its journal cannot be served (locked, unreadable).

    Locked, the message is for the person who opened the session in a second editor window:
    which process holds it and what to do (``locked_message``). Programs read ``reason`` and
    ``holder_pid``, never the message.
    """

    def __init__(self, session_id: str, cause: JournalError | OSError) -> None:
        if isinstance(cause, JournalLeased | JournalTakenOver):
            message = str(cause)  # says who has it (a shared store), and what to do
        elif isinstance(cause, JournalLocked):
            message = locked_message(session_id, cause)
        elif isinstance(cause, JournalStoreDown):
            message = f"session {session_id!r} cannot be served now: {cause}"
        elif isinstance(cause, OSError) and _out_of_descriptors(cause):
            message = exhausted_message(session_id, cause)
        else:
            message = f"cannot open session {session_id!r}: {cause}"
        super().__init__(message)
        self.session_id = session_id
        self.cause = cause

    @property
    def reason(self) -> str:
        if isinstance(self.cause, JournalTakenOver):
            return "taken_over"
        if isinstance(self.cause, JournalStoreDown):
            return "store_unreachable"
        if isinstance(self.cause, JournalLocked):
            return "journal_locked"
        return "too_many_open_files" if _out_of_descriptors(self.cause) else "journal_unreadable"

    @property
    def holder_pid(self) -> int | None:
        """The pid holding the session's lock (locked, and the pid was readable), else None."""
        return self.cause.holder_pid if isinstance(self.cause, JournalLocked) else None


def locked_message(session_id: str, locked: JournalLocked) -> str:
    """Who holds the session and the ways out: close it there, or fork it (a fork only reads
    the parent, so it needs no lock)."""
    pid = locked.holder_pid
    if pid is not None and pid == os.getpid():
        return (
            f"session {session_id!r} is already open in this process (pid {pid}): "
            f"close it before opening it again (lock {locked.lock_path})"
        )
    holder = (
        f"another acp-agent process (pid {pid}), probably another editor window"
        if pid is not None
        else f"another process (its pid is not readable in {locked.lock_path})"
    )
    return (
        f"session {session_id!r} is already open in {holder}; only one process at a time may "
        "write a session. Close it there (or quit that process), then load it again; or fork "
        "it (session/fork, acp-agent journal fork) to go on with a copy here. "
        f"(lock {locked.lock_path})"
    )


class SessionBusy(SessionError):
    """The session has an open or queued turn (or work still under way): it cannot be deleted
    now. Nothing was changed."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id!r} has a turn running or queued: cancel it (session/cancel) "
            "and wait for its prompt's answer, then delete the session"
        )
        self.session_id = session_id


def _out_of_descriptors(cause: JournalError | OSError) -> bool:
    return isinstance(cause, OSError) and cause.errno in (errno.EMFILE, errno.ENFILE)


def exhausted_message(session_id: str, cause: OSError) -> str:
    """The process (EMFILE) or the system (ENFILE) has no file descriptor left."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    whose = "this process" if cause.errno == errno.EMFILE else "the system"
    return (
        f"cannot open session {session_id!r}: {whose} has run out of file descriptors "
        f"(soft limit RLIMIT_NOFILE {soft}; {cause}). Idle sessions gave theirs back already; "
        "tool or MCP processes, sockets and running turns hold the rest. Close some sessions, "
        "or raise the limit (ulimit -n) and restart the agent."
    )


class ForkRefused(SessionError):
    """The fork point (or the history before it) cannot start a session; nothing was created."""

    def __init__(self, session_id: str, seq: int, reason: str) -> None:
        super().__init__(f"cannot fork session {session_id!r} at seq {seq}: {reason}")
        self.session_id = session_id
        self.seq = seq
        self.reason = reason


class RewindRefused(SessionError):
    """``_acp_agent/rewind`` to a turn the session does not have; nothing was created."""

    def __init__(self, session_id: str, to_turn: int, reason: str) -> None:
        super().__init__(f"cannot rewind session {session_id!r} to turn {to_turn}: {reason}")
        self.session_id = session_id
        self.to_turn = to_turn


class UnknownModel(SessionError, LookupError):
    def __init__(self, spec: object, choices: list[str]) -> None:
        super().__init__(f"unknown model {spec!r}; one of {', '.join(choices)}")
        self.spec = spec
        self.choices = choices


class ModelKeyMissing(SessionError):
    """The model's provider needs an API key that is not set."""

    def __init__(self, spec: str, needed: KeyNeeded) -> None:
        super().__init__(f"authentication required for model {spec}: {needed.message}")
        self.spec = spec
        self.needed = needed
