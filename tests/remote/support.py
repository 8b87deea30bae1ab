"""The real agent listening on the network (``serve --listen``), and a raw WebSocket client.

``listening(...)`` starts ``acp-agent serve --listen ws://127.0.0.1:0`` (or ``http://``) as a
subprocess, waits for its ``listening on <url>`` stderr line (docs/contract.md §10) and yields
the running ``Listener``; at the end it sends SIGTERM and checks the exit status 0 (§1, §10).
``WsPeer`` is a raw client on the ``websockets`` library: it sends frames, reads frames, and
records every frame the agent sent (with the method of the request each answer answers) so
that ``validate`` checks each against the ACP schema (``tests/support/acp_schema.py``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from tests.support.acp_schema import AcpSchema, JsonObject
from tests.support.process import agent_command
from tests.support.transcript import Transcript

TOKEN = "s3cret-token-for-tests"
START_TIMEOUT_S = 20.0
EXIT_TIMEOUT_S = 10.0


@dataclass
class Listener:
    process: subprocess.Popen[bytes]
    url: str
    stderr: list[str] = field(default_factory=list)
    pump: threading.Thread | None = None

    @property
    def ws_url(self) -> str:
        return self.url.replace("http://", "ws://", 1)

    def log_text(self) -> str:
        return "".join(self.stderr)


def _pump(stream: Any, into: list[str], ready: threading.Event, url: list[str]) -> None:
    for raw in iter(stream.readline, b""):
        line = raw.decode(errors="replace")
        into.append(line)
        if "listening on " in line and not url:
            url.append(line.split("listening on ", 1)[1].split()[0].strip('",'))
            ready.set()
    ready.set()


def start(
    script: Path,
    state_dir: Path,
    *args: str,
    scheme: str = "ws",
    env: dict[str, str] | None = None,
    runner: Callable[..., list[str]] = agent_command,
) -> Listener:
    """``runner``: how the agent is started (``stuck_thread_agent.command`` adds a test tool)."""
    argv = runner(
        "serve", "--listen", f"{scheme}://127.0.0.1:0", "--model", f"script:{script}", *args
    )
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    full_env.update(ACP_AGENT_STATE_DIR=str(state_dir), ACP_AGENT_TOKEN=TOKEN)
    full_env.update(env or {})
    process = subprocess.Popen(argv, env=full_env, stdin=subprocess.DEVNULL, stderr=subprocess.PIPE)
    lines: list[str] = []
    ready, url = threading.Event(), list[str]()
    pump = threading.Thread(target=_pump, args=(process.stderr, lines, ready, url), daemon=True)
    pump.start()
    ready.wait(START_TIMEOUT_S)
    listener = Listener(process, url[0] if url else "", lines, pump)
    if not url:
        process.kill()
        _reap(listener)
        raise AssertionError("the agent never said 'listening on':\n" + "".join(lines))
    return listener


def _reap(listener: Listener) -> int:
    code = listener.process.wait()
    if listener.pump is not None:
        listener.pump.join(5)
    if listener.process.stderr is not None:
        listener.process.stderr.close()
    return code


def stop(listener: Listener, *, signalled: bool = False) -> int:
    """SIGTERM (unless the test sent it already: a second one exits at once, 128 + 15), then
    the exit status (killed and failed if it does not exit)."""
    if not signalled and listener.process.poll() is None:
        listener.process.send_signal(signal.SIGTERM)
    try:
        listener.process.wait(EXIT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        listener.process.kill()
        _reap(listener)
        raise AssertionError(
            "the agent did not exit after SIGTERM:\n" + listener.log_text()
        ) from None
    return _reap(listener)


@contextlib.contextmanager
def listening(
    script: Path, state_dir: Path, *args: str, scheme: str = "ws", env: dict[str, str] | None = None
) -> Iterator[Listener]:
    listener = start(script, state_dir, *args, scheme=scheme, env=env)
    try:
        yield listener
    finally:
        code = stop(listener)
    assert code == 0, f"exit status {code}:\n{listener.log_text()}"


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


class WsPeer:
    """One raw WebSocket client; every agent frame is kept for ``validate``."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.transcript = Transcript()
        self._next_id = 0

    async def send(self, message: JsonObject) -> None:
        self.transcript.record_client_message(message)
        await self.ws.send(json.dumps(message))

    async def request(self, method: str, params: JsonObject) -> int:
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    async def receive(self) -> JsonObject:
        text = await self.ws.recv()
        assert isinstance(text, str), "the agent sends text frames only"
        self.transcript.feed_agent_output(text.encode() + b"\n")
        frame: JsonObject = json.loads(text)
        return frame

    async def answer_of(self, request_id: int) -> JsonObject:
        """Frames up to the answer to ``request_id`` (notifications on the way are kept)."""
        while True:
            frame = await self.receive()
            if frame.get("id") == request_id and "method" not in frame:
                return frame

    async def call(self, method: str, params: JsonObject) -> JsonObject:
        return await self.answer_of(await self.request(method, params))

    async def initialize(self) -> JsonObject:
        caps = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        return await self.call("initialize", {"protocolVersion": 1, "clientCapabilities": caps})

    async def new_session(self, cwd: Path) -> str:
        answer = await self.call("session/new", {"cwd": str(cwd), "mcpServers": []})
        session_id: str = answer["result"]["sessionId"]
        return session_id

    def validate(self, schema: AcpSchema) -> None:
        """Every frame against the schema; a notification byte-identical to one already checked
        (a long stream of equal chunks) is the same instance and is checked once."""
        self.transcript.end_agent_output()
        seen: set[bytes] = set()
        distinct = Transcript(client_messages=self.transcript.client_messages)
        for line in self.transcript.agent_lines:
            if b'"id":' in line or line not in seen:
                distinct.agent_lines.append(line)
                seen.add(line)
        distinct.validate(schema)


@contextlib.asynccontextmanager
async def peer(
    url: str, *, token: str | None = TOKEN, rcvbuf: int | None = None, **kwargs: Any
) -> Any:
    """A connected ``WsPeer``; ``rcvbuf`` fixes the socket's receive buffer (no autotuning),
    so a peer that stops reading stops the agent's writes sooner."""
    headers = bearer(token) if token is not None else {}
    if rcvbuf is not None:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        host, port = url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        sock.connect((host, int(port)))
        sock.setblocking(False)
        kwargs["sock"] = sock
    async with connect(url, additional_headers=headers, **kwargs) as ws:
        yield WsPeer(ws)


def prompt_params(session_id: str, text: str) -> JsonObject:
    return {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]}
