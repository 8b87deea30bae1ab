"""The file seam: the five operations the writer needs from a journal file, and the real one.

Why positioned writes and no ``O_APPEND``
-----------------------------------------
The writer keeps its own model of the file: ``durable size`` (bytes known to be on disk) and
the file's logical end (``JournalFile.size``). A retry after a failure truncates back to the
durable size and rewrites what follows. ``OsJournalFile`` therefore opens with plain
``O_WRONLY`` and writes with ``os.pwrite`` at the tracked end: every byte lands exactly where
the model says, whatever happened before. With ``O_APPEND`` the kernel picks the offset, so
a write issued after a truncate that failed would land *behind* a torn fragment and bury it
mid-file. (Only one writer ever touches a journal: ``lock.py`` makes sure of that.)

An ``OsJournalFile`` does not own its descriptor for life: it borrows it from the process's
``DescriptorCache`` for each operation, and the cache closes idle ones when room is needed
(``descriptors.py``). Positioned writes make that cheap: a reopened descriptor needs no seek and
nothing re-read. The path is remembered for the reopen; ``rename_journal`` moves it along.

Modes: journal, lock and side files are created ``0600`` and directories ``0700``; both are
set again with ``chmod`` after creation, because the umask may have taken bits away.

The fault-injecting twin, and ``file_factory()``, which reads ``ACP_AGENT_JOURNAL_FAULTS``,
live in ``faults.py``.
"""

from __future__ import annotations

import contextlib
import errno
import os
from pathlib import Path
from typing import Final, Protocol

from acp_agent.journal.descriptors import DESCRIPTORS, DescriptorCache

FILE_MODE: Final = 0o600
DIR_MODE: Final = 0o700


class JournalFile(Protocol):
    """An open journal file, written at its logical end."""

    @property
    def size(self) -> int:
        """The logical end: where the next ``write`` lands."""
        ...

    def write(self, data: bytes) -> int:
        """Write at ``size``; return how many bytes were written (may be fewer than asked)."""
        ...

    def fdatasync(self) -> None: ...

    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes; ``size`` becomes the logical end."""
        ...

    def close(self) -> None: ...


class FileFactory(Protocol):
    def __call__(self, path: Path, *, create: bool) -> JournalFile:
        """Open ``path`` for writing: ``create`` makes (or empties) it with mode 0600."""
        ...


class OsJournalFile:
    """A real journal file. Its descriptor is borrowed per operation from the process's
    ``DescriptorCache`` (``descriptors.py``), which may close it while the journal is idle; the
    next operation opens the file again by path and checks it is the same inode."""

    def __init__(self, fd: int, path: Path, cache: DescriptorCache = DESCRIPTORS) -> None:
        stat = os.fstat(fd)
        self.fd = fd
        self.path = path
        self._inode = (stat.st_dev, stat.st_ino)
        self._size = stat.st_size
        self._cache = cache
        self._closed = False
        cache.adopt(self)

    @property
    def size(self) -> int:
        return self._size

    def write(self, data: bytes) -> int:
        fd = self._take()
        try:
            written = os.pwrite(fd, data, self._size)
        finally:
            self._cache.give_back(self)
        self._size += written
        return written

    def fdatasync(self) -> None:
        fd = self._take()
        try:
            os.fdatasync(fd)
        finally:
            self._cache.give_back(self)

    def truncate(self, size: int) -> None:
        fd = self._take()
        try:
            os.ftruncate(fd, size)
        finally:
            self._cache.give_back(self)
        self._size = size

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if _staged.get(self.path) is self:
                del _staged[self.path]
            self._cache.forget(self)

    # -- the Handle side (descriptors.py) ---------------------------------------------------

    def reopen(self) -> int:
        fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        stat = os.fstat(fd)
        if (stat.st_dev, stat.st_ino) != self._inode:
            os.close(fd)
            raise OSError(
                errno.ESTALE, f"journal file was replaced since it was opened: {self.path}"
            )
        return fd

    def close_fd(self, fd: int) -> None:
        os.close(fd)

    def _take(self) -> int:
        """Borrow the descriptor (``give_back`` it after the one call it is for)."""
        if self._closed:
            raise OSError(errno.EBADF, f"journal file is closed: {self.path}")
        return self._cache.take(self)


_staged: dict[Path, OsJournalFile] = {}
"""Files created (``create=True``) and not yet renamed into place: ``rename_journal`` moves them."""


def open_journal_file(
    path: Path, *, create: bool, cache: DescriptorCache = DESCRIPTORS
) -> OsJournalFile:
    """The real ``FileFactory``."""
    flags = os.O_WRONLY | os.O_CLOEXEC | (os.O_CREAT | os.O_TRUNC if create else 0)
    fd = os.open(path, flags, FILE_MODE)
    try:
        if create:
            os.fchmod(fd, FILE_MODE)
        file = OsJournalFile(fd, path, cache)
    except BaseException:
        os.close(fd)
        raise
    if create:
        _staged[path] = file
    return file


def rename_journal(source: Path, target: Path) -> None:
    """``os.rename`` a journal file created by ``open_journal_file``, which may still be open:
    its later reopens (``descriptors.py``) then look for it at ``target``."""
    os.rename(source, target)
    file = _staged.pop(source, None)
    if file is not None:
        file.path = target


def write_private_file(path: Path, data: bytes) -> None:
    """Create ``path`` (it must not exist) with mode 0600, write ``data`` and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[_checked(os.write(fd, view)) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(directory: Path, name: str, data: bytes) -> None:
    """``directory/name`` replaced atomically by ``data`` (mode 0600, fsynced, then renamed)."""
    tmp = directory / f".{name}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        while view:
            view = view[_checked(os.write(fd, view)) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, directory / name)


def _checked(written: int) -> int:
    if written <= 0:
        raise OSError(errno.EIO, "write made no progress")
    return written


def fsync_dir(path: Path) -> None:
    """Make the entries of directory ``path`` (creations, renames) durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_private_dirs(path: Path) -> list[Path]:
    """``mkdir -p`` with mode 0700 for the directories it creates; returns them, top first.

    Each new directory's entry is made durable by fsyncing its parent. Directories that exist
    already are left as they are (they may be the user's).
    """
    missing = [p for p in (path, *path.parents) if not p.is_dir()][::-1]
    created: list[Path] = []
    for directory in missing:
        with contextlib.suppress(FileExistsError):  # a concurrent creator won the race
            os.mkdir(directory, DIR_MODE)
            os.chmod(directory, DIR_MODE)
            created.append(directory)
        fsync_dir(directory.parent)
    return created
