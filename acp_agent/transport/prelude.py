"""The process's wire before the event loop runs: its fds, its first line, its signals.

Theory of operation
-------------------
``take_stdout()`` keeps a private duplicate of fd 1 for the wire and points fd 1 (and
``sys.stdout``) at stderr, so a stray ``print()``, a hook or a child process can never put bytes
between two frames. ``take_stdin()`` does the same for fd 0 with ``/dev/null``, so a child that
reads stdin cannot steal protocol bytes. Both duplicates are non-inheritable (PEP 446).

``read_first_line`` reads the input on the main thread, before anything else is imported, up to
its first ``\\n`` (``acp_agent/launch.py`` answers an ``initialize`` there). What it read is
handed on whole: ``FirstLine.rest`` goes first to the ``FdSource`` the connection reads,
preceded by a ``\\n`` when the line was answered (a blank line, which the connection ignores,
so its line reader still treats the line after it as a later line: only the input's very first
line may drop a BOM, ``framing.py``). When no complete line fits ``max_line_bytes``, or at end
of input or on a read error, ``line`` is ``None`` and every byte read is handed on untouched:
the connection then reads exactly the input it always read.

Signals: while the main thread blocks there, SIGTERM and SIGINT end the wait (``Interrupted``;
nothing is open yet, the process exits 0 as docs/contract.md §1 asks). Before and after it,
until the event loop installs its own receiver, they are kept (``SignalLatch.take``) and
handled as soon as it does (``process/life.py``'s ``Life.watch_signals``), so a signal sent while the config
is read, or right after ``initialize`` was answered, still ends the process as one sent later
would.

Which signals came is read from a wakeup fd, not recorded by the handler. The handoff to the
loop is where a handler's record goes wrong: asyncio's ``add_signal_handler`` sets its own
wakeup fd and *then* replaces the handler, and a signal that comes between the two reaches
both, the loop through its wakeup fd and the old handler, which the interpreter runs at its
next check (a handler's list counted one SIGTERM twice, and the process took it for a second
signal and exited 143). The C-level handler writes each signal's number to exactly one wakeup
fd, the latch's until the loop's replaces it; so each signal is taken once, by the latch or by
the loop.

This module imports nothing but the standard library's ``os``, ``select``, ``signal``, ``sys``
and ``collections.abc``: it runs before ``initialize`` is answered.
"""

from __future__ import annotations

import os
import select
import signal
import sys
from collections.abc import Callable, Sequence
from types import FrameType

READ_CHUNK = 256 * 1024
WATCHED = (signal.SIGTERM, signal.SIGINT)


def take_stdout() -> int:
    """Return a private fd for the wire; fd 1 and ``sys.stdout`` now write to stderr."""
    sys.stdout.flush()
    wire = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return wire


def take_stdin() -> int:
    """Return a private fd for the wire's input; fd 0 now reads ``/dev/null``."""
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    return wire


def read_chunk(fd: int, size: int) -> bytes:
    """One blocking read; an fd left ``O_NONBLOCK`` by the parent is waited on, not spun on."""
    while True:
        try:
            return os.read(fd, size)
        except BlockingIOError:
            select.select([fd], [], [])


def write_all(fd: int, data: bytes) -> None:
    with memoryview(data) as view:
        written = 0
        while written < len(view):
            try:
                written += os.write(fd, view[written:])
            except BlockingIOError:
                select.select([], [fd], [])


class FirstLine:
    """What ``read_first_line`` read (a plain class: a dataclass costs more to define than
    this whole module to import)."""

    __slots__ = ("line", "raw", "rest")

    def __init__(self, line: bytes | None, rest: bytes, raw: bytes) -> None:
        self.line = line
        """The first line, without its ``\\n`` and one trailing ``\\r``; ``None``: none was read."""
        self.rest = rest
        """What was read after the line's ``\\n``."""
        self.raw = raw
        """Every byte read."""

    def handed_on(self, answered: bool) -> bytes:
        """The bytes the connection reads first (see the module docstring)."""
        return b"\n" + self.rest if answered else self.raw


def read_first_line(fd: int, max_line_bytes: int, chunk: int = READ_CHUNK) -> FirstLine:
    """Read up to the input's first ``\\n`` (or its end, a read error, or ``max_line_bytes``)."""
    buffer = bytearray()
    end = -1
    while end < 0 and len(buffer) <= max_line_bytes:
        try:
            data = read_chunk(fd, chunk)
        except OSError:
            data = b""  # the connection reads again, and logs the error
        if not data:
            break
        found = data.find(b"\n")  # in the new chunk only: a long line costs linear time
        end = len(buffer) + found if found >= 0 else -1
        buffer += data
    raw = bytes(buffer)
    if end < 0 or end > max_line_bytes:
        return FirstLine(None, raw, raw)
    return FirstLine(raw[:end].removesuffix(b"\r"), raw[end + 1 :], raw)


class Interrupted(Exception):
    """SIGTERM or SIGINT came while the first line was awaited."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


EarlySignals = Callable[[], Sequence[int]]
"""What a receiver calls once it is installed: the signals that came before it (each once)."""


def no_early_signals() -> Sequence[int]:
    return ()


class SignalLatch:
    """SIGTERM and SIGINT before the event loop: kept for ``take``, and ``Interrupted`` too
    while ``blocking`` (set around a read the signal must end). The event loop's signal receiver replaces these handlers and the wakeup fd
    (and puts the default handlers back when it closes, when the process is about to exit
    anyway). Main thread only (``signal.set_wakeup_fd``)."""

    def __init__(self) -> None:
        self.blocking = False
        self._read, write = os.pipe()  # not inherited by children (PEP 446)
        os.set_blocking(self._read, False)
        os.set_blocking(write, False)  # set_wakeup_fd requires it
        signal.set_wakeup_fd(write)
        for signum in WATCHED:
            signal.signal(signum, self._on_signal)

    def _on_signal(self, signum: int, frame: FrameType | None) -> None:
        if self.blocking:
            raise Interrupted(signum)

    def take(self) -> list[int]:
        """The signals that came and were not taken yet, in order."""
        taken: list[int] = []
        while True:
            try:
                data = os.read(self._read, 64)
            except BlockingIOError:
                return taken
            if not data:
                return taken
            taken += [signum for signum in data if signum in WATCHED]
