"""One writer per session: an exclusive, non-blocking ``flock`` on ``<session-dir>/lock``.

``flock`` locks belong to an open file description, so a second opener fails whether it is
another process or this one (every acquire opens the file anew). The kernel drops the lock
when the holder's descriptor closes, including when the holder dies: there is no stale lock
to clean up, and the lock file itself is never deleted (deleting it would let two openers lock
two different files). The holder writes its pid into the file so the loser can name it.
The descriptor is close-on-exec, so tool subprocesses never inherit the lock.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from acp_agent.journal.errors import JournalLocked
from acp_agent.journal.files import FILE_MODE
from acp_agent.journal.paths import LOCK_NAME


class SessionLock:
    def __init__(self, fd: int, path: Path) -> None:
        self._fd = fd
        self.path = path

    @classmethod
    def acquire(cls, directory: Path, session_id: str) -> SessionLock:
        """Lock the session in ``directory`` now, or raise ``JournalLocked`` at once."""
        path = directory / LOCK_NAME
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
        try:
            os.fchmod(fd, FILE_MODE)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            os.ftruncate(fd, 0)
            os.pwrite(fd, b"%d\n" % os.getpid(), 0)
        except BlockingIOError:
            os.close(fd)
            raise JournalLocked(session_id, path, _holder_pid(path)) from None
        except BaseException:
            os.close(fd)
            raise
        return cls(fd, path)

    @property
    def held(self) -> bool:
        return self._fd >= 0

    def release(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


@dataclass(frozen=True)
class Holder:
    pid: int | None
    """The pid the holder wrote, ``None`` if it cannot be read."""


def current_holder(directory: Path) -> Holder | None:
    """Who holds the session's lock right now, or ``None`` when nobody does (or there is no
    lock file). Probes with a shared, non-blocking ``flock`` released at once: a writer opening
    the session in that very instant is refused once and may retry."""
    try:
        fd = os.open(directory / LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return Holder(_holder_pid(directory / LOCK_NAME))
    finally:
        os.close(fd)  # closing drops our shared lock, if we got it
    return None


def _holder_pid(path: Path) -> int | None:
    try:
        return int(path.read_bytes().strip() or b"x")
    except (OSError, ValueError):
        return None
