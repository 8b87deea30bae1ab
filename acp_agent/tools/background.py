"""A session's background tasks: ``run_command {background: true}``, ``task_output``, ``task_stop``.

Theory of operation
-------------------
A task is a shell command started through the same spawn as a local ``run_command``
(``process.start_group``: its own process group, in ``process._LIVE`` so the process's last
act kills it) and watched by a task of ``TaskTable.run``'s group, never by the tool call that
started it: the call answers at once with the task's id. The watcher copies the output into
``<session dir>/tasks/<id>.out``, bounded at ``OUTPUT_FILE_LIMIT`` bytes (what comes after is
counted, not kept: never unbounded memory, never an unbounded file); once the shell exited it
kills what is left of the group (as ``run_local`` does), reaps it, records the ending
(``task_record.py``) and hands the ending's text to ``on_end``, which is the session's
``inject``: the same path as ``_acp_agent/inject`` (appended at once between turns, staged and
drained after the complete tool batch during one). So a task's end never starts a turn.

At most ``MAX_RUNNING`` tasks run at once per session. ``close`` (the session is closed or
deleted, or the process ends) kills every group and waits for the watchers; endings met while
closing are recorded, not injected, and reported at the next open. ``session/cancel`` does not
touch tasks: they are the session's, not the turn's.

Output writes are plain file writes on the event loop's thread: page-cache writes of at most
one pipe read each, cheaper than a thread hop per chunk.
"""

from __future__ import annotations

import itertools
import os
import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import BinaryIO

import anyio
import anyio.abc
import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import Source, SourceKind, source
from acp_agent.logs import get_logger
from acp_agent.sandbox.guard import Confined
from acp_agent.tools.process import DETACHED_GRACE_S, end_group, kill_group, start_group
from acp_agent.tools.task_record import (
    CLOSED,
    RESTART,
    TaskRecord,
    ending_text,
    kill_if_same,
    last_lines,
    load_table,
    output_path,
    proc_start,
    save_table,
)

log = get_logger("acp_agent.tools")

MAX_RUNNING = 8
OUTPUT_FILE_LIMIT = 8 << 20
"""A task's output file keeps at most this many bytes (the first ones)."""

OnEnd = Callable[[list[ContentBlock], Source], Awaitable[object]]


class TaskLimit(Exception):
    """A 9th task while 8 run."""


class UnknownTask(Exception):
    pass


class _Running(msgspec.Struct):
    process: anyio.abc.Process
    ended: anyio.Event = msgspec.field(default_factory=anyio.Event)


class TaskTable:
    def __init__(self, directory: Path, clock: Callable[[], int]) -> None:
        self.directory = directory
        self.clock = clock
        self.records: dict[str, TaskRecord] = {r.id: r for r in load_table(directory)}
        self.on_end: OnEnd | None = None
        self._running: dict[str, _Running] = {}
        self._tg: anyio.abc.TaskGroup | None = None
        self._closing = False
        self._stopped = anyio.Event()

    # -- after a restart -------------------------------------------------------------------

    def unreported(self) -> list[tuple[str, list[ContentBlock], Source]]:
        """The endings the session was never told of (tasks a dead process left running are
        marked ended by the restart, their groups killed): ``(task id, content, source)``."""
        found = []
        for record in self.records.values():
            if record.running:
                kill_if_same(record)
                record.status, record.ended_ms = RESTART, self.clock()
            if not record.reported:
                found.append((record.id, *self._ending(record)))
        return found

    def mark_reported(self, task_ids: list[str]) -> None:
        for task_id in task_ids:
            self.records[task_id].reported = True
        self._save()

    # -- the running tasks -----------------------------------------------------------------

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """Hold the watchers' task group until ``close``."""
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            await self._stopped.wait()
            tg.cancel_scope.cancel()

    def running_count(self) -> int:
        return len(self._running)

    async def start(self, command: str, cwd: Path, confined: Confined | None = None) -> TaskRecord:
        """Start ``command`` as a task, inside ``confined``'s sandbox; ``TaskLimit`` when
        ``MAX_RUNNING`` already run; ``OSError`` when the shell cannot start."""
        if self._tg is None or self._closing:
            raise TaskLimit("the session is closing: no task can start")
        if len(self._running) >= MAX_RUNNING:
            raise TaskLimit(
                f"{MAX_RUNNING} background tasks are already running in this session; "
                "wait for one to end or stop one with task_stop"
            )
        record = TaskRecord(
            id=self._next_id(), command=command, cwd=str(cwd), started_ms=self.clock()
        )
        output_path(self.directory, record.id).parent.mkdir(mode=0o700, exist_ok=True)
        out = os.open(
            output_path(self.directory, record.id), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600
        )
        try:
            process = await start_group(command, str(cwd), confined)
        except BaseException:
            os.close(out)
            raise
        record.pid, record.proc_start = process.pid, proc_start(process.pid)
        self.records[record.id] = record
        self._running[record.id] = running = _Running(process)
        self._tg.start_soon(self._watch, record, running, out)
        await anyio.to_thread.run_sync(self._save)
        log.info("task_started", task_id=record.id, pid=process.pid)
        return record

    def get(self, task_id: str) -> TaskRecord:
        record = self.records.get(task_id)
        if record is None:
            known = ", ".join(self.records) or "none"
            raise UnknownTask(f"no task {task_id!r} in this session (tasks: {known})")
        return record

    async def stop(self, task_id: str) -> TaskRecord:
        """Kill the task's process group and wait until its ending is recorded."""
        record = self.get(task_id)
        running = self._running.get(task_id)
        if running is not None:
            kill_group(running.process.pid)
            await running.ended.wait()
        return record

    def read(self, task_id: str, since: int | None, limit: int) -> tuple[str, int, int]:
        """The output from byte ``since`` (``None``: its last ``limit`` bytes), at most
        ``limit`` bytes: ``(text, from, to)``; ``to`` is the next ``since``."""
        self.get(task_id)
        path = output_path(self.directory, task_id)
        try:
            with path.open("rb") as out:
                size = out.seek(0, os.SEEK_END)
                start = max(size - limit, 0) if since is None else min(max(since, 0), size)
                out.seek(start)
                data = out.read(limit)
        except FileNotFoundError:
            return "", 0, 0
        return data.decode("utf-8", "replace"), start, start + len(data)

    async def close(self) -> None:
        """Kill every running task and wait for its watcher (session closed or deleted)."""
        self._closing = True
        for running in list(self._running.values()):
            kill_group(running.process.pid)
        for running in list(self._running.values()):
            await running.ended.wait()
        self._stopped.set()

    # -- one task's life --------------------------------------------------------------------

    async def _watch(self, record: TaskRecord, running: _Running, out: int) -> None:
        process = running.process
        try:
            with os.fdopen(out, "wb", buffering=0) as sink:
                await self._copy_until_exit(record, process, sink)
        finally:
            with anyio.CancelScope(shield=True):
                await end_group(process)
                self._ended(record, process.returncode)
                del self._running[record.id]
                await self._announce(record)
                running.ended.set()  # after the announce: a ``task_stop`` result follows it

    async def _copy_until_exit(
        self, record: TaskRecord, process: anyio.abc.Process, sink: BinaryIO
    ) -> None:
        assert process.stdout is not None
        eof = anyio.Event()
        stdout = process.stdout

        async def copy() -> None:
            async for chunk in stdout:
                self._keep(record, chunk, sink)
            eof.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(copy)
            await process.wait()
            kill_group(process.pid)  # what the shell left in its group ends with it
            with anyio.move_on_after(DETACHED_GRACE_S):
                await eof.wait()
            tg.cancel_scope.cancel()

    def _keep(self, record: TaskRecord, chunk: bytes, sink: BinaryIO) -> None:
        room = OUTPUT_FILE_LIMIT - sink.tell()
        if room > 0:
            sink.write(chunk[:room])
        record.dropped += max(len(chunk) - max(room, 0), 0)

    def _ended(self, record: TaskRecord, code: int | None) -> None:
        record.ended_ms = self.clock()
        if self._closing:
            record.status = CLOSED
        elif code is None:
            record.status = "unknown"
        else:
            record.status = str(code) if code >= 0 else _signal_name(-code)
        log.info("task_ended", task_id=record.id, status=record.status)
        self._save()

    async def _announce(self, record: TaskRecord) -> None:
        """Tell the session (``on_end``: its ``inject``); while closing, the next open does."""
        if self._closing or self.on_end is None:
            return
        content, src = self._ending(record)
        try:
            await self.on_end(content, src)
        except Exception as exc:  # the session went away meanwhile: reported at its next open
            log.warning("task_ending_not_injected", task_id=record.id, error=repr(exc))
            return
        record.reported = True
        self._save()

    def _ending(self, record: TaskRecord) -> tuple[list[ContentBlock], Source]:
        text = ending_text(record, last_lines(self.directory, record.id))
        return [TextContent(text=text)], source(SourceKind.TASK, id=record.id)

    def _next_id(self) -> str:
        taken = set(self.records)
        return next(f"t{n}" for n in itertools.count(len(taken) + 1) if f"t{n}" not in taken)

    def _save(self) -> None:
        try:
            save_table(self.directory, list(self.records.values()))
        except OSError as exc:
            log.warning("task_table_unsaved", error=str(exc))


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
