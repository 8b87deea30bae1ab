"""A client with the ``terminal`` capability on raw pipes, for tests of the endings.

``TerminalPeer`` reads the agent's frames through a ``RawAgent`` and answers what the agent asks:
``terminal/create`` with ``t1``, ``t2``, ...; ``terminal/kill`` and ``session/request_permission``
(allow once) at once. ``terminal/wait_for_exit`` and ``terminal/release`` are *held*: the command
runs on until the test says otherwise (``answer_held``). Every frame read is kept in ``frames``,
with the time it arrived. Once ``mute``, nothing is answered (nothing would be read).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.integration.support import request
from tests.support.acp_schema import JsonObject
from tests.support.recording import AgentExitedError, AgentTimeoutError, RawAgent

TERMINAL_CLIENT: JsonObject = {
    "protocolVersion": 1,
    "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": True},
}
HELD = frozenset({"terminal/wait_for_exit", "terminal/release"})


def run_call(call_id: str, command: str) -> JsonObject:
    return {"id": call_id, "name": "run_command", "arguments": {"command": command}}


def initialize_terminal_client(request_id: int = 1) -> JsonObject:
    return request(request_id, "initialize", TERMINAL_CLIENT)


@dataclass
class TerminalPeer:
    agent: RawAgent
    frames: list[tuple[float, JsonObject]] = field(default_factory=list)
    held: list[JsonObject] = field(default_factory=list)
    ended: bool = False
    mute: bool = False
    """Answer nothing more (the agent stopped reading: after a signal, after stdin EOF)."""
    _terminals: int = 0

    def requests(self, method: str) -> list[JsonObject]:
        return [f for _, f in self.frames if f.get("method") == method and "id" in f]

    def answer_to(self, request_id: Any) -> JsonObject | None:
        for _, frame in self.frames:
            if "method" not in frame and frame.get("id") == request_id:
                return frame
        return None

    def answered_at(self, request_id: Any) -> float | None:
        for at, frame in self.frames:
            if "method" not in frame and frame.get("id") == request_id:
                return at
        return None

    async def until(self, done: Callable[[], bool], within: float, what: str) -> None:
        """Read (and answer) frames until ``done()``; fail after ``within`` seconds."""
        deadline = time.monotonic() + within
        while not done():
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"not within {within}s: {what}; held: {self.held}")
            try:
                frame = await self.agent.recv(left)
            except AgentExitedError:
                self.ended = True
                if not done():
                    raise
                return
            except AgentTimeoutError:
                continue  # the loop condition reports it
            self.frames.append((time.monotonic(), frame))
            await self._answer(frame)

    async def until_answered(self, request_id: Any, within: float) -> JsonObject:
        await self.until(
            lambda: self.answer_to(request_id) is not None, within, f"answer {request_id}"
        )
        answer = self.answer_to(request_id)
        assert answer is not None
        return answer

    async def to_the_end(self, within: float) -> None:
        """Read until the agent closes its stdout."""
        await self.until(lambda: self.ended, within, "the agent's stdout to close")

    async def answer_held(self, method: str, result: Any = None) -> int:
        """Answer every held request of ``method``; how many there were."""
        mine = [f for f in self.held if f["method"] == method]
        for frame in mine:
            self.held.remove(frame)
            await self.agent.respond(frame["id"], result if result is not None else {})
        return len(mine)

    async def _answer(self, frame: JsonObject) -> None:
        method, request_id = frame.get("method"), frame.get("id")
        if method is None or request_id is None or self.mute:
            return
        if method == "terminal/create":
            self._terminals += 1
            await self.agent.respond(request_id, {"terminalId": f"t{self._terminals}"})
        elif method == "terminal/kill":
            await self.agent.respond(request_id, {})
        elif method == "session/request_permission":
            option = frame["params"]["options"][0]["optionId"]
            await self.agent.respond(
                request_id, {"outcome": {"outcome": "selected", "optionId": option}}
            )
        elif method in HELD:
            self.held.append(frame)
        else:
            raise AssertionError(f"unexpected request from the agent: {frame}")
