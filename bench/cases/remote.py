"""ACP over WebSocket (``serve --listen ws://``) against the same agent over stdio, same run.

Two agent processes on the same script model: one over stdio (``WireClient``), one listening on
``ws://127.0.0.1:0`` and driven by a ``websockets`` client in this process. Interleaved rounds:

- round trip: ``prompt_batch`` sequential ``initialize`` requests (answered at once by the
  router: the transport, framing and dispatch, no session work); a sample is microseconds per
  request and answer.
- streaming: a prompt whose turn streams ``stream_chunks`` ``agent_message_chunk``
  notifications; a sample is notifications per second, from the request to its answer.

The target (issue 17): WebSocket costs at most 2x stdio per message, both ways.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import msgspec
from websockets.asyncio.client import ClientConnection, connect

from bench.lab import PROTOCOL, Lab, Sizes, handshake, ours_command, start_ours, text_prompt
from bench.stats import Better, Figure, Target, interleave, median
from bench.wire import WireClient, WireError

CHUNK = "token "
TOKEN = "bench-token"
_ENCODE = msgspec.json.Encoder()
_DECODE = msgspec.json.Decoder()


class WsClient:
    """Sequential requests over one WebSocket; counts the ``session/update`` it sees."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.updates = 0
        self._next_id = 0

    async def request(self, method: str, params: Any) -> Any:
        self._next_id += 1
        request_id = self._next_id
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        await self.ws.send(_ENCODE.encode(message).decode())
        while True:
            frame = _DECODE.decode(await self.ws.recv(decode=False))
            if frame.get("id") == request_id and "method" not in frame:
                if "error" in frame:
                    raise WireError(f"{method}: {frame['error']}")
                return frame["result"]
            if frame.get("method") == "session/update":
                self.updates += 1


async def start_listening(lab: Lab, script: Path) -> tuple[asyncio.subprocess.Process, str]:
    argv = [*ours_command(script, name="remote-ws"), "--listen", "ws://127.0.0.1:0"]
    log = lab.stderr("remote-ws")
    env = {**os.environ, "ACP_AGENT_STATE_DIR": str(lab.state_dir("remote-ws"))}
    env["ACP_AGENT_TOKEN"] = TOKEN
    with log.open("ab") as err:
        process = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stderr=err, env=env
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for line in log.read_text(errors="replace").splitlines():
            if "listening on " in line:
                return process, line.split("listening on ", 1)[1].split()[0].strip('",')
        if process.returncode is not None:
            break
        await asyncio.sleep(0.05)
    process.kill()
    raise WireError(f"the listening agent did not start: see {log}")


async def stop_listening(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGTERM)
    try:
        await asyncio.wait_for(process.wait(), 10)
    except TimeoutError:
        process.kill()
        await process.wait()


async def stdio_round_trips(client: WireClient, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        await client.request("initialize", PROTOCOL)
    return (time.perf_counter() - started) / n * 1e6


async def ws_round_trips(client: WsClient, n: int) -> float:
    started = time.perf_counter()
    for _ in range(n):
        await client.request("initialize", PROTOCOL)
    return (time.perf_counter() - started) / n * 1e6


async def stdio_stream(client: WireClient, session_id: str, n: int) -> float:
    before = client.updates.get(session_id, 0)
    started = time.perf_counter()
    await client.request("session/prompt", text_prompt(session_id, "go"))
    elapsed = time.perf_counter() - started
    assert client.updates.get(session_id, 0) - before >= n
    return n / elapsed


async def ws_stream(client: WsClient, session_id: str, n: int) -> float:
    before = client.updates
    started = time.perf_counter()
    await client.request("session/prompt", text_prompt(session_id, "go"))
    elapsed = time.perf_counter() - started
    assert client.updates - before >= n
    return n / elapsed


async def run(lab: Lab, sizes: Sizes) -> list[Figure]:
    n, batch = sizes.stream_chunks, sizes.prompt_batch
    rounds, warmup = sizes.stream_rounds, 1
    script = lab.script("remote", [{"chunks": [CHUNK] * n}] * (rounds + warmup))
    stdio = await start_ours(lab, "remote-stdio", script)
    process, url = await start_listening(lab, script)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    try:
        async with connect(url, additional_headers=headers, max_size=None) as ws:
            remote = WsClient(ws)
            stdio_sid = await handshake(stdio, lab.cwd)
            await remote.request("initialize", PROTOCOL)
            created = await remote.request("session/new", {"cwd": str(lab.cwd), "mcpServers": []})
            ws_sid = str(created["sessionId"])
            trips = await interleave(
                {
                    "ws": lambda: ws_round_trips(remote, batch),
                    "stdio": lambda: stdio_round_trips(stdio, batch),
                },
                rounds,
                warmup,
            )
            streams = await interleave(
                {
                    "ws": lambda: ws_stream(remote, ws_sid, n),
                    "stdio": lambda: stdio_stream(stdio, stdio_sid, n),
                },
                rounds,
                warmup,
            )
    finally:
        await stdio.close()
        await stop_listening(process)
    trip = {name: median(values) for name, values in trips.items()}
    rate = {name: median(values) for name, values in streams.items()}
    print(f"bench: remote: round trip {trip}, stream {rate}", file=sys.stderr)
    return [
        Figure(
            key="remote_ws_round_trip",
            title=f"WebSocket request round trip ({batch} sequential initialize)",
            unit="us",
            ours=trip["ws"],
            baseline=trip["stdio"],
            baseline_label="the same agent over stdio, same run",
            better=Better.LOWER,
            target=Target(2.0, text="<= 2x stdio"),
            samples=rounds,
        ),
        Figure(
            key="remote_ws_stream",
            title=f"WebSocket agent_message_chunk notifications per second ({n} per turn)",
            unit="notif/s",
            ours=rate["ws"],
            baseline=rate["stdio"],
            baseline_label="the same agent over stdio, same run",
            better=Better.HIGHER,
            target=Target(0.5, text=">= 0.5x stdio (<= 2x per message)"),
            samples=rounds,
        ),
    ]
