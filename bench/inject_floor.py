"""The floor of the durable idle inject: the least any agent built one way can take, on this machine.

``python bench/inject_floor.py MODE JOURNAL``: a stdio JSON-RPC process that answers
``initialize`` and does a durable idle injection (``_acp_agent/inject`` appends one line to
``JOURNAL`` and makes it durable; ``_acp_agent/when_idle`` is answered once it is) with nothing
else in it: no session, no turn machine, no schema, no logging. ``bench/cases/inject.py`` times
it exactly as it times ours, so its figures are what the design itself costs here (issue 16
point 4, ``docs/benchmarks.md``):

- ``tasks``: the shape of ours. A reader task on the loop (stdin on the loop, as
  ``transport/stdio.py`` reads a pipe), a hop to an actor task that owns the journal, the
  ``write`` + ``fdatasync`` on a long-lived thread (as ``journal/flusher.py``), a writer task
  that writes the frames; ``when_idle`` waits for the flush in a task of its own (ours: a
  ``Deferred``).
- ``inline``: no hop at all. The reader appends and syncs on the loop, and every frame a read
  produced goes out in one ``write``: the least any design can do, at the price of blocking the
  loop (every other session of the process) for each fsync.

The frames have the shape of ours (an answer per request, a ``session/update`` for the
injection), so the client decodes the same amount.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

import anyio
import msgspec

_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()


def _answer(request_id: object, result: object) -> bytes:
    return _ENCODE.encode({"jsonrpc": "2.0", "id": request_id, "result": result}) + b"\n"


def _update(session_id: str, text: str) -> bytes:
    update = {
        "sessionUpdate": "user_message_chunk",
        "content": {"type": "text", "text": text},
        "messageId": "m1",
        "_meta": {"acp_agent": {"source": {"kind": "client"}}},
    }
    params = {"sessionId": session_id, "update": update}
    return _ENCODE.encode({"jsonrpc": "2.0", "method": "session/update", "params": params}) + b"\n"


class _Journal:
    def __init__(self, path: str) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.seq = 0

    def line(self, text: str) -> bytes:
        self.seq += 1
        event = {"content": [{"type": "text", "text": text}], "source": {"kind": "client"}}
        entry = {"seq": self.seq, "time": 0, "type": "user/message", "data": event}
        return _ENCODE.encode(entry) + b"\n"

    def sync(self, data: bytes) -> None:
        os.write(self.fd, data)
        os.fdatasync(self.fd)


def _initialize_result() -> dict[str, Any]:
    return {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}


def _text(params: dict[str, Any]) -> str:
    content = params["content"]
    return content if isinstance(content, str) else str(content)


async def _lines() -> AsyncIterator[list[bytes]]:
    """Lines of stdin, read on the loop (stdin is a pipe)."""
    os.set_blocking(0, False)
    pending = b""
    while True:
        await anyio.wait_readable(0)
        try:
            chunk = os.read(0, 256 * 1024)
        except BlockingIOError:
            continue
        if not chunk:
            return
        *lines, pending = (pending + chunk).split(b"\n")
        yield lines


async def inline(journal: _Journal) -> None:
    healthy = {"journal": {"healthy": True, "unflushed": 0}}
    async for lines in _lines():
        out = []
        for line in lines:
            message = _DECODE.decode(line)
            method, request_id, params = message["method"], message["id"], message["params"]
            if method == "_acp_agent/inject":
                text = _text(params)
                journal.sync(journal.line(text))
                out += [_update(params["sessionId"], text), _answer(request_id, _PLACED)]
            elif method == "_acp_agent/when_idle":
                out.append(_answer(request_id, healthy))
            else:
                out.append(_answer(request_id, _initialize_result()))
        os.write(1, b"".join(out))


_PLACED = {"messageId": "m1", "placement": "appended"}


class _Writer:
    """The frames, written by a task of their own, as many at once as are queued."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.ready = anyio.Event()

    def put(self, frame: bytes) -> None:
        self.frames.append(frame)
        self.ready.set()

    async def run(self) -> None:
        while True:
            await self.ready.wait()
            self.ready = anyio.Event()
            frames, self.frames = self.frames, []
            os.write(1, b"".join(frames))


class _Flusher:
    """One long-lived thread; the outcome comes back with ``call_soon_threadsafe``."""

    def __init__(self, journal: _Journal, loop: asyncio.AbstractEventLoop) -> None:
        self.journal, self.loop = journal, loop
        self.jobs: queue.SimpleQueue[tuple[bytes, anyio.Event]] = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True).start()

    def submit(self, data: bytes, done: anyio.Event) -> None:
        self.jobs.put((data, done))

    def _serve(self) -> None:
        while True:
            data, done = self.jobs.get()
            self.journal.sync(data)
            self.loop.call_soon_threadsafe(done.set)


async def tasks(journal: _Journal) -> None:
    writer, flusher = _Writer(), _Flusher(journal, asyncio.get_running_loop())
    flushed = anyio.Event()
    flushed.set()
    send, receive = anyio.create_memory_object_stream[tuple[str, str, anyio.Event]](100)
    healthy = {"journal": {"healthy": True, "unflushed": 0}}

    async def actor() -> None:
        nonlocal flushed
        async for session_id, text, replied in receive:
            flushed = anyio.Event()
            flusher.submit(journal.line(text), flushed)
            writer.put(_update(session_id, text))
            replied.set()

    async def when_idle(request_id: object) -> None:
        await flushed.wait()
        writer.put(_answer(request_id, healthy))

    async with anyio.create_task_group() as tg:
        tg.start_soon(writer.run)
        tg.start_soon(actor)
        async for lines in _lines():
            for line in lines:
                message = _DECODE.decode(line)
                method, request_id, params = message["method"], message["id"], message["params"]
                if method == "_acp_agent/inject":
                    replied = anyio.Event()
                    await send.send((params["sessionId"], _text(params), replied))
                    await replied.wait()
                    writer.put(_answer(request_id, _PLACED))
                elif method == "_acp_agent/when_idle":
                    tg.start_soon(when_idle, request_id)
                else:
                    writer.put(_answer(request_id, _initialize_result()))
        tg.cancel_scope.cancel()


MODES = {"inline": inline, "tasks": tasks}


def main() -> None:
    mode, path = sys.argv[1:3]
    anyio.run(MODES[mode], _Journal(path))


if __name__ == "__main__":
    main()
