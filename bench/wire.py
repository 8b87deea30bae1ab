"""One JSON-RPC client for every agent the benchmarks drive (ours, the SDK's, the bare loops).

``WireClient`` spawns a child with stdin/stdout pipes (stderr goes to a file, so a chatty child
never blocks), reads stdout in large chunks, splits at ``\\n`` and decodes each line with a reused
msgspec decoder: the same cost for every agent, so it cancels out of the ratios. Responses
resolve the future of their request; ``session/update`` notifications are counted per session
and handed to an optional ``on_update`` hook; requests from the agent (``fs/*``, permissions)
are answered by an optional ``on_request`` hook (its return value is the result; ``None`` or no
hook: an error, since most benchmarks need none).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import msgspec

Json = Any
READ_CHUNK = 256 * 1024
_DECODE = msgspec.json.Decoder()
_ENCODE = msgspec.json.Encoder()


class WireError(RuntimeError):
    """The child misbehaved: it exited, wrote a non-frame, or answered with an error."""


class WireClient:
    def __init__(self, process: asyncio.subprocess.Process, started: float) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self.started = started
        """``perf_counter()`` taken just before the child was spawned."""
        self.updates: dict[str, int] = {}
        """``session/update`` notifications received, per session id."""
        self.kinds: dict[tuple[str, str], int] = {}
        """The same, per (session id, ``sessionUpdate`` kind)."""
        self.frames = 0
        self.on_update: Callable[[Json, float], None] | None = None
        self.on_request: Callable[[Json], Json | None] | None = None
        """Answers a request from the agent: its result, or ``None`` to refuse it."""
        self.error: WireError | None = None
        """Set when the child wrote something that is not a frame."""
        self._stdin = process.stdin
        self._pending: dict[int, asyncio.Future[Json]] = {}
        self._next_id = 1
        self._closed = asyncio.Event()
        self._reader = asyncio.create_task(self._read(process.stdout))

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        stderr: Path | None = None,
        cwd: Path | None = None,
    ) -> WireClient:
        err = stderr.open("ab") if stderr is not None else None
        try:
            started = time.perf_counter()
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=err if err is not None else asyncio.subprocess.DEVNULL,
                env={**os.environ, **(env or {})},
                cwd=cwd,
                limit=READ_CHUNK,
            )
        finally:
            if err is not None:
                err.close()
        return cls(process, started)

    @property
    def pid(self) -> int:
        return self.process.pid

    # -- sending ---------------------------------------------------------------------------------

    async def send_raw(self, data: bytes) -> None:
        self._stdin.write(data)
        await self._stdin.drain()

    def start_request(self, method: str, params: Json = None) -> asyncio.Future[Json]:
        """Write a request (without waiting for the pipe to drain); its response's future."""
        return self.start_requests([(method, params)])[0]

    def start_requests(self, calls: list[tuple[str, Json]]) -> list[asyncio.Future[Json]]:
        """Write requests in one ``write`` (asyncio's pipe transport writes each ``write`` at
        once, so two ``start_request`` calls are two syscalls, between which the client may
        lose its core to the agent it just woke); their responses' futures."""
        futures, lines = [], []
        for method, params in calls:
            request_id = self._next_id
            self._next_id += 1
            future: asyncio.Future[Json] = asyncio.get_running_loop().create_future()
            self._pending[request_id] = future
            message: dict[str, Json] = {"jsonrpc": "2.0", "id": request_id, "method": method}
            if params is not None:
                message["params"] = params
            lines.append(_ENCODE.encode(message) + b"\n")
            futures.append(future)
        self._stdin.write(b"".join(lines))
        return futures

    async def flush(self) -> None:
        """Wait until what was written so far went into the pipe."""
        await self._stdin.drain()

    async def request(self, method: str, params: Json = None, within: float = 120.0) -> Json:
        """Send a request; its ``result`` (``WireError`` for an error response)."""
        future = self.start_request(method, params)
        await self._stdin.drain()
        return result_of(await asyncio.wait_for(future, within))

    async def notify(self, method: str, params: Json = None) -> None:
        message: dict[str, Json] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send_raw(_ENCODE.encode(message) + b"\n")

    # -- ending ----------------------------------------------------------------------------------

    async def close(self, grace: float = 10.0) -> int:
        """Close stdin, wait for the child to exit (kill it after ``grace`` s); its status."""
        with contextlib.suppress(OSError):
            self._stdin.close()
        try:
            code = await asyncio.wait_for(self.process.wait(), grace)
        except TimeoutError:
            self.process.kill()
            code = await self.process.wait()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._reader, grace)
        return code

    def count(self, session_id: str, *, skip: frozenset[str] = frozenset()) -> int:
        """Updates of the session so far, leaving out the kinds in ``skip``."""
        return sum(
            n for (sid, kind), n in self.kinds.items() if sid == session_id and kind not in skip
        )

    def rss_kib(self) -> int:
        return rss_kib(self.pid)

    # -- reading ---------------------------------------------------------------------------------

    async def _read(self, stdout: asyncio.StreamReader) -> None:
        partial = b""
        try:
            while chunk := await stdout.read(READ_CHUNK):
                now = time.perf_counter()
                *lines, partial = (partial + chunk).split(b"\n")
                for line in lines:
                    self._on_line(line, now)
            if partial:
                raise WireError(f"the child's last line has no newline: {partial[:200]!r}")
        except WireError as exc:
            self.error = exc
            self._fail_all(exc)
        finally:
            self._closed.set()
            self._fail_all(WireError(f"the child closed its stdout (pid {self.pid})"))

    def _on_line(self, line: bytes, now: float) -> None:
        try:
            frame = _DECODE.decode(line)
        except msgspec.DecodeError as exc:
            raise WireError(f"the child wrote a non-frame: {line[:200]!r}") from exc
        if not isinstance(frame, dict):
            raise WireError(f"the child wrote a non-object frame: {line[:200]!r}")
        self.frames += 1
        method = frame.get("method")
        if method is None:
            request_id = frame.get("id")
            future = self._pending.pop(request_id, None) if isinstance(request_id, int) else None
            if future is not None and not future.done():
                future.set_result(frame)
        elif "id" in frame:
            self._refuse(frame)
        elif method == "session/update":
            session_id = frame["params"]["sessionId"]
            self.updates[session_id] = self.updates.get(session_id, 0) + 1
            key = (session_id, frame["params"]["update"]["sessionUpdate"])
            self.kinds[key] = self.kinds.get(key, 0) + 1
            if self.on_update is not None:
                self.on_update(frame, now)

    def _refuse(self, frame: Json) -> None:
        result = self.on_request(frame) if self.on_request is not None else None
        if result is not None:
            reply = {"jsonrpc": "2.0", "id": frame["id"], "result": result}
        else:
            error = {"code": -32601, "message": "the benchmark client answers no such request"}
            reply = {"jsonrpc": "2.0", "id": frame["id"], "error": error}
        self._stdin.write(_ENCODE.encode(reply) + b"\n")

    def _fail_all(self, exc: WireError) -> None:
        for future in self._pending.values():
            if not future.done():
                future.set_exception(exc)
        self._pending.clear()


def result_of(frame: Json) -> Json:
    if "error" in frame:
        raise WireError(f"error response: {frame['error']}")
    if "result" not in frame:
        raise WireError(f"not a response: {frame}")
    return frame["result"]


def rss_kib(pid: int) -> int:
    """``VmRSS`` of a process in KiB (Linux ``/proc``)."""
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith("VmRSS:"):
            return int(text.split()[1])
    raise WireError(f"no VmRSS for pid {pid}")


def fd_count(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))
