"""The journal's flusher threads (``acp_agent/journal/flusher.py``)."""

from __future__ import annotations

import threading

import anyio
import pytest

from acp_agent.journal.flusher import Flusher


async def test_a_job_runs_on_a_flusher_thread_and_its_outcome_comes_back() -> None:
    flusher = Flusher()
    assert await flusher.run(lambda _: threading.current_thread().name, None) == (
        "acp-journal-flush-1"
    )

    def fails(_: None) -> None:
        raise OSError(5, "boom")

    with pytest.raises(OSError, match="boom"):
        await flusher.run(fails, None)
    assert flusher.threads == 1  # the thread is reused, not one per job


async def test_threads_grow_to_the_cap_and_later_jobs_wait_their_turn() -> None:
    # flusher.py: threads start when a job finds none free, up to ``max_threads``; past that,
    # jobs wait in the queue in FIFO order (and all of them run).
    flusher = Flusher(max_threads=2)
    gate = threading.Event()
    started: list[int] = []
    lock = threading.Lock()
    two_started = threading.Event()

    def job(i: int) -> int:
        with lock:
            started.append(i)
            if len(started) == 2:
                two_started.set()
        gate.wait(30)
        return i

    results: list[int] = []

    async def one(i: int) -> None:
        results.append(await flusher.run(job, i))

    async with anyio.create_task_group() as tg:
        for i in range(5):
            tg.start_soon(one, i)
        assert await anyio.to_thread.run_sync(two_started.wait, 30)
        assert flusher.threads == 2 and sorted(started) == [0, 1]
        gate.set()
    assert sorted(results) == [0, 1, 2, 3, 4]
    assert flusher.threads == 2


async def test_submit_calls_done_on_the_loop() -> None:
    flusher = Flusher()
    loop_thread = threading.current_thread()
    seen: list[tuple[object, object, bool]] = []
    done = anyio.Event()

    def on_done(value: object, error: BaseException | None) -> None:
        seen.append((value, error, threading.current_thread() is loop_thread))
        done.set()

    flusher.submit(lambda x: x * 2, 21, on_done)
    await done.wait()
    assert seen == [(42, None, True)]
