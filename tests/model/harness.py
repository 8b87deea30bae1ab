"""The real ACP server in-process: ``acp_agent.app``'s serve loop over an in-memory wire.

Same wiring as ``acp-agent`` on stdio (router, sessions, journal on disk, the catalog of
models), minus the process and the signal handlers, so a provider conformance run takes
milliseconds and a test can look at the provider's own objects (the loopback server's view
of the HTTP connection) while the agent is still running.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import msgspec

from acp_agent.app import serve_connection
from acp_agent.hooks.bridge import HookSet
from acp_agent.hooks.config import HooksConfig
from acp_agent.model.registry import ModelCatalog
from acp_agent.options import add_server_options, options_from
from acp_agent.transport.memory import MemoryClient

Frame = dict[str, Any]


class InProcessAgent:
    def __init__(self, client: MemoryClient) -> None:
        self.client = client
        self.frames: list[Frame] = []
        self._changed = anyio.Event()
        self._next_id = 0

    async def pump(self) -> None:
        while (line := await self.client.receive_line()) is not None:
            self.frames.append(json.loads(line))
            self._changed.set()
            self._changed = anyio.Event()

    async def send(self, frame: Frame) -> None:
        await self.client.send_line(json.dumps(frame).encode())

    async def request(self, method: str, params: Frame) -> Frame:
        """Send a request and wait for its response frame (``result`` or ``error``)."""
        request_id = await self.start(method, params)
        return await self.response(request_id)

    async def start(self, method: str, params: Frame) -> int:
        self._next_id += 1
        await self.send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        return self._next_id

    async def response(self, request_id: int, within: float = 10.0) -> Frame:
        def answer() -> Frame | None:
            return next(
                (f for f in self.frames if f.get("id") == request_id and "method" not in f), None
            )

        await self.wait_for(lambda: answer() is not None, f"the answer to {request_id}", within)
        found = answer()
        assert found is not None
        return found

    async def notify(self, method: str, params: Frame) -> None:
        await self.send({"jsonrpc": "2.0", "method": method, "params": params})

    async def wait_for(
        self, predicate: Callable[[], bool], what: str, within: float = 10.0
    ) -> None:
        deadline = time.monotonic() + within
        while not predicate():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out after {within}s waiting for {what}")
            with anyio.move_on_after(remaining):
                await self._changed.wait()

    def updates(self, session_id: str) -> list[Frame]:
        return [
            f["params"]["update"]
            for f in self.frames
            if f.get("method") == "session/update" and f["params"]["sessionId"] == session_id
        ]


def server_options(state_dir: Path) -> Any:
    parser = argparse.ArgumentParser()
    add_server_options(parser)
    options = options_from(parser.parse_args([]))
    return msgspec.structs.replace(options, model=None, state_dir=state_dir, config=None)


@asynccontextmanager
async def in_process_agent(models: ModelCatalog, state_dir: Path) -> AsyncIterator[InProcessAgent]:
    """Serve until the block ends; then end the input and wait for a clean shutdown."""
    client = MemoryClient()
    agent = InProcessAgent(client)
    ended = anyio.Event()
    options, hooks = server_options(state_dir), HookSet.from_config(HooksConfig())

    async def serve() -> None:
        try:
            await serve_connection(
                options, models, hooks, client.agent_source, client.agent_sink, signals=False
            )
        finally:
            client.close_output()
            ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        tg.start_soon(agent.pump)
        try:
            yield agent
        finally:
            client.close_input()
            with anyio.fail_after(10):
                await ended.wait()
