"""Journal descriptors: a few hundred open at most, however many sessions are open.

Theory of operation
-------------------
A journal needs its descriptor only while a flush (or a tail cut) runs on it; between turns a
session's journal is idle. So ``OsJournalFile`` (``files.py``) does not own a descriptor for
life: it borrows one from the process-wide ``DESCRIPTORS`` cache for each operation (``take``
then ``give_back``; ``borrow`` is the same as a context manager). An idle journal keeps its
descriptor while there is room; when there is not, the least recently used idle descriptor is
closed, and that journal opens its file again (by path, checked to be the same inode) the next
time it is borrowed.
Sessions that flush often stay at the recent end and keep theirs, so a turn costs no reopen
unless more than ``capacity`` journals are busy at once.

Invariants (``tests/journal/test_descriptors.py`` holds them):

- a borrowed descriptor is never closed by eviction; one borrower per handle at a time (the
  writer's flushes take turns, so a journal's operations never overlap);
- a reopened descriptor refers to the file first opened (same device and inode); if the path
  now names another file, the borrow fails with ``OSError`` and nothing is written anywhere;
- a handle's descriptor number is read and changed only under the cache's lock, or by the one
  thread that borrowed it;
- the number of open journal descriptors exceeds ``capacity`` only while more than ``capacity``
  are borrowed at the same time (bounded by the flusher's threads, ``flusher.MAX_THREADS``,
  and the worker-thread pool that opens journals).

Capacity: a quarter of the soft ``RLIMIT_NOFILE`` (so 256 under the common 1,024), the rest is
left for stdio, pipes to tool subprocesses, sockets and MCP servers. If a reopen still meets
``EMFILE``/``ENFILE``, every idle journal descriptor is closed and the open is tried once more;
creating or opening a session does the same (``with_room``). If that fails too, the ``OSError``
reaches the caller: a flush reports it and retries later, an open is refused
(``SessionUnavailable``, reason ``too_many_open_files``).

Rejected: closing a journal at the end of each turn (the actor would have to say when it is
idle, and every idle inject would pay an open and a close); keeping a descriptor per session
(a process tops out near the descriptor limit / 2 sessions, the lock took the other one).
"""

from __future__ import annotations

import errno
import resource
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Final, ParamSpec, Protocol, TypeVar

MIN_CAPACITY: Final = 16
MAX_CAPACITY: Final = 256
_EXHAUSTED: Final = frozenset({errno.EMFILE, errno.ENFILE})
P = ParamSpec("P")
T = TypeVar("T")


class Handle(Protocol):
    """Something whose descriptor the cache may close and the handle can open again."""

    fd: int
    """The open descriptor, or -1 while closed."""

    def reopen(self) -> int:
        """Open the same file again and return the new descriptor (do not store it)."""
        ...

    def close_fd(self, fd: int) -> None:
        """Close ``fd``, a descriptor of this handle."""
        ...


def default_capacity() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return MAX_CAPACITY
    return max(MIN_CAPACITY, min(MAX_CAPACITY, soft // 4))


class DescriptorCache:
    def __init__(self, capacity: int | Callable[[], int] = default_capacity) -> None:
        self._capacity_of = capacity
        self._capacity: int | None = None
        self._lock = threading.Lock()
        self._idle: OrderedDict[Handle, None] = OrderedDict()
        self._borrowed = 0
        self.reopens = 0
        self.evictions = 0

    @property
    def capacity(self) -> int:
        """Fixed at first use (the descriptor limit is read once)."""
        if self._capacity is None:
            of = self._capacity_of
            self._capacity = of if isinstance(of, int) else of()
        return self._capacity

    @property
    def open_count(self) -> int:
        """Journal descriptors open right now (idle and borrowed)."""
        with self._lock:
            return len(self._idle) + self._borrowed

    def adopt(self, handle: Handle) -> None:
        """Take in a handle whose descriptor was just opened (it counts as recently used)."""
        with self._lock:
            self._idle[handle] = None
            self._make_room()

    @contextmanager
    def borrow(self, handle: Handle) -> Iterator[int]:
        fd = self.take(handle)
        try:
            yield fd
        finally:
            self.give_back(handle)

    def take(self, handle: Handle) -> int:
        """The handle's descriptor, opened again if it was closed; it stays open (and counts as
        borrowed) until ``give_back``. ``borrow`` without the context manager, for hot paths."""
        with self._lock:
            self._borrowed += 1
            if handle.fd >= 0:
                self._idle.pop(handle, None)
                return handle.fd
            self._make_room()
        try:
            fd = self._reopen(handle)
        except BaseException:
            with self._lock:
                self._borrowed -= 1
            raise
        handle.fd = fd  # borrowed and not idle: no other thread looks at it now
        return fd

    def give_back(self, handle: Handle) -> None:
        """The handle is idle again, and the most recently used."""
        with self._lock:
            self._borrowed -= 1
            if handle.fd >= 0:
                self._idle[handle] = None
                self._make_room()

    def release_idle(self) -> int:
        """Close every idle descriptor (for an opener that ran out); return how many."""
        with self._lock:
            before = self.evictions
            self._make_room(keep=0)
            return self.evictions - before

    def forget(self, handle: Handle) -> None:
        """Close the handle's descriptor for good (it is not borrowed)."""
        with self._lock:
            self._idle.pop(handle, None)
            fd, handle.fd = handle.fd, -1
        if fd >= 0:
            handle.close_fd(fd)

    # -- inside -----------------------------------------------------------------------------

    def _reopen(self, handle: Handle) -> int:
        try:
            fd = handle.reopen()
        except OSError as exc:
            if exc.errno not in _EXHAUSTED:
                raise
            with self._lock:
                self._make_room(keep=0)
            fd = handle.reopen()
        self.reopens += 1
        return fd

    def _make_room(self, keep: int | None = None) -> None:
        """Close least recently used idle descriptors until at most ``keep`` journal
        descriptors are open (``capacity`` if not given). The cache's lock is held."""
        limit = self.capacity if keep is None else keep
        while self._idle and len(self._idle) + self._borrowed > limit:
            victim, _ = self._idle.popitem(last=False)
            fd, victim.fd = victim.fd, -1
            self.evictions += 1
            victim.close_fd(fd)


DESCRIPTORS: Final = DescriptorCache()
"""The process's cache; every ``OsJournalFile`` borrows from it."""


def with_room(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run ``fn``; if it runs out of descriptors while idle journals hold some, close those and
    run it once more. For openers (``opening.py``): each undoes what it did when it fails."""
    try:
        return fn(*args, **kwargs)
    except OSError as exc:
        if exc.errno not in _EXHAUSTED or not DESCRIPTORS.release_idle():
            raise
    return fn(*args, **kwargs)
