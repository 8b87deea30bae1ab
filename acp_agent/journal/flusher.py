"""The journal's own threads: where every flush's ``write`` + ``fdatasync`` runs.

Theory of operation
-------------------
``FLUSHER.submit(fn, arg)`` hands ``fn(arg)`` to a long-lived daemon thread through one
``SimpleQueue`` at once (no await before the hand-off); the thread hands the outcome back with
``loop.call_soon_threadsafe(done, ...)``: one hand-off each way, nothing else. ``run`` is the
same, awaited. ``anyio.to_thread.run_sync``
(what the writer used before) costs more per call on the path every durable answer waits
for: a checkpoint (a whole loop iteration) before the hand-off, the capacity limiter's
acquire and release, a fresh cancel scope and a copied context (issue 16, the durable idle
inject; ``docs/benchmarks.md``).

Threads are started on demand, when a job finds none free, up to ``MAX_THREADS``; past that,
jobs wait in the queue in FIFO order. So flushes of different sessions still run in parallel
(their fsyncs can share a file system commit), and the number of journal descriptors borrowed
at once stays bounded (``descriptors.py``). The threads never end: they are daemons (as the
stdio threads, ``transport/stdio.py``), so a thread inside ``fdatasync`` cannot hold the process
past its SIGTERM deadline; a flush still running then was never acknowledged, and the next
``open`` repairs whatever part of it reached the file.

The caller is expected to shield the await (the writer does): the job runs to its end whatever
happens to the caller. If the caller's loop is gone by then, the result is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, Final, TypeVar

__all__ = ["FLUSHER", "MAX_THREADS", "Flusher"]

T = TypeVar("T")
A = TypeVar("A")

MAX_THREADS: Final = 16

_Job = tuple[
    Callable[[Any], Any],
    Any,
    asyncio.AbstractEventLoop,
    Callable[[Any, BaseException | None], None],
]


class Flusher:
    def __init__(self, max_threads: int = MAX_THREADS) -> None:
        self._max_threads = max_threads
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._free = 0
        """Threads not running a job, minus jobs queued for them (a hint for starting one)."""

    @property
    def threads(self) -> int:
        return self._threads

    def submit(
        self, fn: Callable[[A], T], arg: A, done: Callable[[T | None, BaseException | None], None]
    ) -> None:
        """Hand ``fn(arg)`` to a flusher thread now; ``done(result, None)`` or
        ``done(None, exception)`` is then called on the running loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            if self._free > 0:
                self._free -= 1
                start = False
            else:
                start = self._threads < self._max_threads
                self._threads += start
        self._jobs.put((fn, arg, loop, done))
        if start:
            threading.Thread(
                target=self._serve, name=f"acp-journal-flush-{self._threads}", daemon=True
            ).start()

    async def run(self, fn: Callable[[A], T], arg: A) -> T:
        """``fn(arg)`` on a flusher thread; its result, or the exception it raised."""
        future: asyncio.Future[T] = asyncio.get_running_loop().create_future()

        def settle(value: T | None, error: BaseException | None) -> None:
            if future.done():  # the caller was cancelled (it should have shielded the await)
                return
            if error is None:
                future.set_result(value)  # type: ignore[arg-type]
            else:
                future.set_exception(error)

        self.submit(fn, arg, settle)
        return await future

    def _serve(self) -> None:
        while True:
            fn, arg, loop, done = self._jobs.get()
            try:
                outcome: tuple[Any, BaseException | None] = (fn(arg), None)
            except BaseException as exc:  # handed to the caller, who re-raises it
                outcome = (None, exc)
            with self._lock:
                self._free += 1
            # The loop may be closed by now (the caller's run ended): nobody waits any more.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(done, *outcome)
            del fn, arg, loop, done, outcome


FLUSHER: Final = Flusher()
"""The process's flusher; every ``JournalWriter`` flushes through it."""
