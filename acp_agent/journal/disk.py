"""The thread side of the writer: a journal file plus the one number that matters, its durable size.

Everything here blocks and runs on a flusher thread (``flusher.py``; a tail cut at open, in a
worker thread), one call at a time (the writer's flushes take turns). ``persist`` is the whole durability protocol of a flush:

1. if the file's logical end is not the durable size (a previous attempt failed after writing
   something, or before a truncate took), truncate back to the durable size;
2. write all the bytes, looping on short writes;
3. ``fdatasync``; only then does the durable size move.

Any ``OSError`` leaves the durable size where it was, so the next ``persist`` starts from the
last bytes known to be on disk. See ``writer.py`` for why bytes written before a failed
fdatasync are never trusted.
"""

from __future__ import annotations

import errno

from acp_agent.journal.files import JournalFile


class DurableFile:
    def __init__(self, file: JournalFile, durable_size: int) -> None:
        self.file = file
        self.durable_size = durable_size
        self.writes = 0
        self.syncs = 0
        self.truncates = 0

    def persist(self, data: bytes) -> None:
        """Make ``data`` durable right after the durable prefix, or raise ``OSError``."""
        if self.file.size != self.durable_size:
            self._truncate(self.durable_size)
        self._write_all(data)
        self._sync()
        self.durable_size += len(data)

    def cut(self, size: int) -> None:
        """Durably shorten the file to ``size`` bytes (drops a damaged tail)."""
        self._truncate(size)
        self._sync()
        self.durable_size = size

    def close(self) -> None:
        self.file.close()

    def _write_all(self, data: bytes) -> None:
        while data:
            self.writes += 1
            written = self.file.write(data)
            if written <= 0:
                raise OSError(errno.EIO, "journal write made no progress")
            data = data[written:]

    def _sync(self) -> None:
        self.syncs += 1
        self.file.fdatasync()

    def _truncate(self, size: int) -> None:
        self.truncates += 1
        self.file.truncate(size)
