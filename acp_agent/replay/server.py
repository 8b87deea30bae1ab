"""One agent server process of a replay: its frames, the waits on them, its end.

A pump task reads stdout as bytes and splits it at ``\\n`` only (JSON strings may hold U+2028);
every complete line is decoded and appended to ``frames`` (a line that is not JSON becomes
``{"unparsed": text}`` so the comparison shows it). Another task drains stderr into memory so a
chatty server never blocks on a full pipe; its tail goes into error messages.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from acp_agent.replay.steps import Json, Wait, WaitKind

READ_CHUNK = 64 * 1024
EXIT_GRACE_S = 15.0


class ReplayError(AssertionError):
    """The client script could not be carried out (a wait timed out, the server died ...)."""


@dataclass
class RunRecord:
    """What one server process wrote, and what the client sent it."""

    frames: list[Json] = field(default_factory=list)
    sent: list[Json] = field(default_factory=list)
    cut: bytes = b""
    """An incomplete last line (only after a kill)."""
    exit_code: int | None = None
    stderr: bytearray = field(default_factory=bytearray)

    def request_methods(self) -> dict[str, str]:
        """``id -> method`` of every request the client sent in this run."""
        return {
            json.dumps(frame["id"]): frame["method"]
            for frame in self.sent
            if isinstance(frame, dict) and "id" in frame and isinstance(frame.get("method"), str)
        }


class Server:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        assert process.stdin and process.stdout and process.stderr
        self.process = process
        self.record = RunRecord()
        self.awaited: deque[Json] = deque()
        self._claimed: set[int] = set()
        self._changed = asyncio.Event()
        self._eof = False
        self._pumps = [
            asyncio.create_task(self._pump(process.stdout)),
            asyncio.create_task(self._drain(process.stderr)),
        ]

    @classmethod
    async def start(cls, argv: Sequence[str], env: Mapping[str, str], cwd: Path) -> Server:
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            cwd=cwd,
        )
        return cls(process)

    async def send(self, frame: Json) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        if stdin.is_closing() or self.process.returncode is not None:
            raise ReplayError(f"cannot send {_short(frame)}: the server has ended")
        self.record.sent.append(frame)
        stdin.write(json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")
        try:
            await stdin.drain()
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise ReplayError(f"cannot send {_short(frame)}: {exc}\n{self.stderr_tail()}") from exc

    async def wait(self, wait: Wait) -> Json:
        """The first unclaimed frame ``wait`` matches (claimed now); ``ReplayError`` on timeout."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait.timeout_ms / 1000
        while True:
            self._changed.clear()
            for index, frame in enumerate(self.record.frames):
                if index not in self._claimed and wait.matches(frame):
                    self._claimed.add(index)
                    if wait.kind is WaitKind.REQUEST:
                        self.awaited.append(frame)
                    return frame
            if self._eof:
                raise self._failed(wait, "the server closed its stdout first")
            try:
                await asyncio.wait_for(self._changed.wait(), max(deadline - loop.time(), 0))
            except TimeoutError:
                raise self._failed(wait, f"timed out after {wait.timeout_ms} ms") from None

    async def respond(self, reply: Mapping[str, Json]) -> None:
        if not self.awaited:
            raise ReplayError("respond: no agent request was awaited (wait for a request first)")
        request = self.awaited.popleft()
        await self.send({"jsonrpc": "2.0", "id": request["id"], **reply})

    async def close(self) -> RunRecord:
        """Close stdin and wait for the exit; a server that does not exit is killed (an error)."""
        stdin = self.process.stdin
        assert stdin is not None
        if not stdin.is_closing():
            stdin.close()
        with contextlib.suppress(OSError):
            await stdin.wait_closed()
        try:
            await asyncio.wait_for(self.process.wait(), EXIT_GRACE_S)
        except TimeoutError:
            await self.kill()
            raise ReplayError(
                f"the server did not exit within {EXIT_GRACE_S}s of its stdin closing\n"
                + self.stderr_tail()
            ) from None
        return await self._finish()

    async def kill(self) -> RunRecord:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGKILL)
        await self.process.wait()
        return await self._finish()

    async def _finish(self) -> RunRecord:
        _, pending = await asyncio.wait(self._pumps, timeout=EXIT_GRACE_S)
        for pump in pending:  # a grandchild (a hook) still holds the pipe open
            pump.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        self.record.exit_code = self.process.returncode
        return self.record

    async def _pump(self, stdout: asyncio.StreamReader) -> None:
        pending = b""
        while chunk := await stdout.read(READ_CHUNK):
            *lines, pending = (pending + chunk).split(b"\n")
            for line in lines:
                self.record.frames.append(_decode(line))
            if lines:
                self._changed.set()
        self.record.cut = pending
        self._eof = True
        self._changed.set()

    async def _drain(self, stderr: asyncio.StreamReader) -> None:
        while chunk := await stderr.read(READ_CHUNK):
            self.record.stderr += chunk

    def stderr_tail(self, lines: int = 15) -> str:
        text = bytes(self.record.stderr).decode(errors="replace").splitlines()[-lines:]
        return "server stderr (tail):\n" + "\n".join(f"  {line}" for line in text)

    def _failed(self, wait: Wait, why: str) -> ReplayError:
        recent = self.record.frames[-8:]
        shown = "\n".join(f"  {_short(frame, 300)}" for frame in recent) or "  (none)"
        return ReplayError(
            f"wait for {wait.describe()}: {why}\n"
            f"last frames of this run ({len(self.record.frames)} in all):\n{shown}\n"
            + self.stderr_tail()
        )


def _decode(line: bytes) -> Json:
    try:
        return json.loads(line)
    except ValueError:
        return {"unparsed": line.decode(errors="replace")}


def _short(value: Json, limit: int = 200) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."
