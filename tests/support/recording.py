"""Drive an agent subprocess while recording every byte it writes to stdout.

Three ways in, from most to least realistic:

- ``recorded_agent(client, command)``: the official Python ACP client (``ClientSideConnection`` of
  ``agent-client-protocol``) talks to the agent, answering its requests with a
  ``RecordingClient``.
- ``RawAgent``: an async context manager for precise wire tests: ``send`` any bytes or object,
  ``recv`` the next frame, ``request`` a method and get its response frame.
- ``run_agent_raw(lines)``: pipe lines into stdin, close it, collect everything (static scripts,
  malformed input).

How the recording works: the harness spawns the agent itself and owns its pipes. A pump task
reads the agent's stdout, appends the bytes to a ``Transcript`` and only then hands the very same
bytes to the SDK (through a ``StreamReader`` of our own) or to ``RawAgent.recv``. Nothing the SDK
does can hide a frame from the recording: it silently drops lines that are not JSON. What the
client sends is recorded too (via the SDK's ``observers`` hook, or by ``RawAgent.send``) so each
response can be checked against the result type of the method it answers. Another task drains
stderr continuously: the SDK's own ``spawn_agent_process`` leaves stderr in a pipe nobody reads,
so an agent that logs more than a pipe buffer blocks forever; it also trims the environment, so
variables the tests set (``ACP_AGENT_STATE_DIR`` ...) would not reach the agent. Here the child
gets ``os.environ`` plus the ``env`` overrides.

By default each entry point validates the whole transcript when it ends without an error: every
agent line must be one JSON-RPC frame that ``tests.support.acp_schema`` accepts, every response
must answer a request the client sent, and the agent must exit with status 0 once its stdin is
closed. Pass ``validate=False`` / ``expect_exit_code=None`` to test misbehaviour on purpose.

The pieces live in ``transcript.py`` (recording and its checks), ``process.py`` (the child and its
pipes) and ``client.py`` (``RecordingClient``); tests import all of it from here.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from acp import PROTOCOL_VERSION, text_block
from acp.connection import StreamDirection, StreamEvent
from acp.core import ClientSideConnection
from acp.schema import Implementation, PromptResponse

from tests.support.acp_schema import JsonObject
from tests.support.client import PermissionRecord, RecordingClient, UpdateRecord
from tests.support.process import (
    AgentExitedError,
    AgentProcess,
    AgentTimeoutError,
    EnvOverrides,
    agent_command,
    child_env,
)
from tests.support.transcript import Transcript, decode_agent_line, tail

__all__ = [
    "AgentExitedError",
    "AgentTimeoutError",
    "PermissionRecord",
    "RawAgent",
    "RecordedAgent",
    "RecordingClient",
    "Transcript",
    "UpdateRecord",
    "agent_command",
    "child_env",
    "decode_agent_line",
    "recorded_agent",
    "run_agent_raw",
]

SDK_READER_LIMIT = 50 * 1024 * 1024  # what acp.run_agent uses for its side


@dataclass
class RecordedAgent:
    """A running agent driven by the official SDK client; see ``recorded_agent``."""

    conn: ClientSideConnection
    client: RecordingClient
    _child: AgentProcess

    @property
    def process(self) -> asyncio.subprocess.Process:
        return self._child.process

    @property
    def transcript(self) -> Transcript:
        return self._child.transcript

    @property
    def stderr(self) -> bytes:
        return bytes(self._child.stderr)

    async def handshake(self, cwd: str | Path, **new_session: Any) -> str:
        """``initialize`` (protocol 1, this client's capabilities), then ``session/new``."""
        await self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=self.client.capabilities(),
            client_info=Implementation(name="acp-agent-tests", version="0.0.0"),
        )
        response = await self.conn.new_session(cwd=str(cwd), mcp_servers=[], **new_session)
        return response.session_id

    async def prompt_text(self, session_id: str, text: str) -> PromptResponse:
        return await self.conn.prompt(session_id=session_id, prompt=[text_block(text)])


@asynccontextmanager
async def recorded_agent(
    client: RecordingClient | None = None,
    command: Sequence[str] | None = None,
    *,
    env: EnvOverrides | None = None,
    cwd: str | Path | None = None,
    use_unstable_protocol: bool = False,
    validate: bool = True,
    expect_exit_code: int | None = 0,
    grace: float = 5.0,
) -> AsyncIterator[RecordedAgent]:
    """Spawn ``command`` (default: the real agent) and connect the official SDK client to it.

    On leaving the block without an error: the connection is closed, the agent's stdin closed,
    the agent given ``grace`` seconds to exit, and then the exit status and every recorded frame
    are checked (see the module docstring).
    """
    sdk_input = asyncio.StreamReader(limit=SDK_READER_LIMIT)

    def feed_sdk(chunk: bytes, lines: list[bytes], at_eof: bool) -> None:
        if chunk:
            sdk_input.feed_data(chunk)
        if at_eof:
            sdk_input.feed_eof()

    child = await AgentProcess.spawn(command or agent_command(), feed_sdk, env, cwd)
    client = client or RecordingClient()

    def observe(event: StreamEvent) -> None:
        if event.direction is StreamDirection.OUTGOING:
            child.transcript.record_client_message(event.message)

    try:
        conn = ClientSideConnection(
            client,
            child.stdin,
            sdk_input,
            use_unstable_protocol=use_unstable_protocol,
            observers=[observe],
        )
        try:
            yield RecordedAgent(conn, client, child)
        finally:
            await conn.close()
    finally:
        await child.stop(grace)
    child.check_after_run(validate, expect_exit_code)


# --- raw wire access --------------------------------------------------------------------------


class RawAgent:
    """The agent on raw pipes: ``send`` anything, ``recv`` frames, ``request`` by method.

    ``timeout`` bounds each ``recv`` / ``request``. ``respond_to``, if given, answers the agent's
    own requests met while ``request`` waits: it gets the request frame and returns a result
    (or ``None`` to leave it unanswered). Frames ``request`` reads past are kept in ``skipped``.
    """

    def __init__(
        self,
        command: Sequence[str] | None = None,
        *,
        env: EnvOverrides | None = None,
        cwd: str | Path | None = None,
        timeout: float = 10.0,
        validate: bool = True,
        expect_exit_code: int | None = 0,
        grace: float = 5.0,
        respond_to: Callable[[JsonObject], JsonObject | None] | None = None,
    ) -> None:
        self.command = list(command or agent_command())
        self.env = env
        self.cwd = cwd
        self.timeout = timeout
        self.validate = validate
        self.expect_exit_code = expect_exit_code
        self.grace = grace
        self.respond_to = respond_to
        self.skipped: list[JsonObject] = []
        self._lines: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._child: AgentProcess | None = None
        self._next_id = 1
        self._sent_partial = b""

    async def __aenter__(self) -> RawAgent:
        self._child = await AgentProcess.spawn(self.command, self._on_lines, self.env, self.cwd)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        child = self._running()
        await child.stop(self.grace)
        if exc_type is None:
            child.check_after_run(self.validate, self.expect_exit_code)

    @property
    def transcript(self) -> Transcript:
        return self._running().transcript

    @property
    def stderr(self) -> bytes:
        return bytes(self._running().stderr)

    @property
    def process(self) -> asyncio.subprocess.Process:
        return self._running().process

    async def send(self, message: Mapping[str, Any] | bytes) -> None:
        """Write an object as one JSON line, or ``bytes`` exactly as given."""
        if isinstance(message, bytes):
            data = message
        else:
            data = json.dumps(message, separators=(",", ":")).encode() + b"\n"
        self._record_sent(data)
        await self._running().write(data)

    async def notify(self, method: str, params: Any = None) -> None:
        await self.send(_call(method, params))

    async def respond(self, request_id: Any, result: Any = None, *, error: Any = None) -> None:
        """Answer a request of the agent with ``result``, or with ``error`` if one is given."""
        reply = {"error": error} if error is not None else {"result": result}
        await self.send({"jsonrpc": "2.0", "id": request_id, **reply})

    async def recv(self, wait: float | None = None) -> JsonObject:
        """The next frame the agent writes (waiting at most ``wait`` s, default ``timeout``)."""
        wait = self.timeout if wait is None else wait
        try:
            line = await asyncio.wait_for(self._lines.get(), wait)
        except TimeoutError:
            raise AgentTimeoutError(
                f"no frame from the agent within {wait}s\n"
                f"agent stderr (tail):\n{tail(self._running().stderr)}"
            ) from None
        if line is None:
            self._lines.put_nowait(None)  # stay at EOF for later calls
            raise AgentExitedError(
                f"agent closed its stdout (exit code {self.process.returncode})\n"
                f"agent stderr (tail):\n{tail(self._running().stderr)}"
            )
        return decode_agent_line(line)

    async def request(self, method: str, params: Any = None) -> JsonObject:
        """Send a request with a fresh integer id; return the response frame that answers it."""
        request_id = self._next_id
        self._next_id += 1
        await self.send(_call(method, params, request_id))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        while True:
            frame = await self.recv(max(deadline - loop.time(), 0.0))
            if "method" not in frame and _same_id(frame.get("id"), request_id):
                return frame
            self.skipped.append(frame)
            if "method" in frame and "id" in frame and self.respond_to is not None:
                result = self.respond_to(frame)
                if result is not None:
                    await self.respond(frame["id"], result)

    async def close_stdin(self) -> None:
        await self._running().close_stdin()

    async def wait_exit(self, wait: float | None = None) -> int:
        """Wait for the agent to exit on its own; return its exit status."""
        wait = self.timeout if wait is None else wait
        try:
            return await asyncio.wait_for(self.process.wait(), wait)
        except TimeoutError:
            raise AgentTimeoutError(f"agent still running after {wait}s") from None

    def _on_lines(self, chunk: bytes, lines: list[bytes], at_eof: bool) -> None:
        for line in lines:
            self._lines.put_nowait(line)
        if at_eof:
            self._lines.put_nowait(None)

    def _record_sent(self, data: bytes) -> None:
        *complete, self._sent_partial = (self._sent_partial + data).split(b"\n")
        for line in complete:
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                if isinstance(message, dict):
                    self.transcript.record_client_message(message)

    def _running(self) -> AgentProcess:
        if self._child is None:
            raise RuntimeError("RawAgent is used outside its `async with` block")
        return self._child


def _call(method: str, params: Any, request_id: int | None = None) -> JsonObject:
    message: JsonObject = {"jsonrpc": "2.0"}
    if request_id is not None:
        message["id"] = request_id
    message["method"] = method
    if params is not None:
        message["params"] = params
    return message


def _same_id(candidate: Any, request_id: int) -> bool:
    return (
        isinstance(candidate, int) and not isinstance(candidate, bool) and candidate == request_id
    )


def run_agent_raw(
    lines: Sequence[bytes],
    args: Sequence[str] = (),
    env: EnvOverrides | None = None,
    timeout: float = 10.0,
    *,
    command: Sequence[str] | None = None,
    cwd: str | Path | None = None,
    validate: bool = True,
) -> tuple[list[JsonObject], bytes, int]:
    """Pipe ``lines`` into the agent, close its stdin, and collect everything it writes.

    Each element of ``lines`` is one line (a newline is appended unless it ends with one).
    Returns ``(frames written to stdout, stderr, exit status)``. With ``validate`` the frames are
    checked as in ``Transcript.validate``, responses matched with the requests among ``lines``.
    """
    argv = [*(command or agent_command()), *args]
    data = b"".join(line if line.endswith(b"\n") else line + b"\n" for line in lines)
    try:
        completed = subprocess.run(
            argv, input=data, capture_output=True, timeout=timeout, env=child_env(env), cwd=cwd
        )
    except subprocess.TimeoutExpired as expired:
        raise AgentTimeoutError(
            f"agent did not exit within {timeout}s after its stdin was closed\n"
            f"agent stderr (tail):\n{tail(expired.stderr or b'')}"
        ) from None
    transcript = Transcript()
    transcript.feed_agent_output(completed.stdout)
    transcript.end_agent_output()
    for line in data.splitlines():
        with contextlib.suppress(ValueError):
            message = json.loads(line)
            if isinstance(message, dict):
                transcript.record_client_message(message)
    if validate:
        transcript.validate()
    return transcript.agent_frames, completed.stderr, completed.returncode
