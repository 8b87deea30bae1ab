"""``Then``: a request answered at once, followed by what the handler still has to say."""

from __future__ import annotations

from typing import Any

import msgspec
from structlog.testing import capture_logs

from acp_agent.transport.connection import Connection, NotificationHandler, RequestHandler, Then
from acp_agent.transport.memory import MemoryClient

from .support import BIG, request


class FollowUpRouter:
    """``make`` answers, then notifies ``made``; ``break`` answers, then its follow-up raises."""

    conn: Connection

    def request_handler(self, method: str) -> RequestHandler | None:
        return {"make": self.make, "break": self.broken, "echo": self.echo}.get(method)

    def notification_handler(self, method: str) -> NotificationHandler | None:
        return None

    async def make(self, params: msgspec.Raw | None) -> object:
        return Then({"made": True}, self.announce)

    async def announce(self) -> None:
        await self.conn.notify("made", {"what": "it"})

    async def broken(self, params: msgspec.Raw | None) -> object:
        async def fail() -> None:
            raise RuntimeError("follow-up bug")

        return Then({"answered": True}, fail)

    async def echo(self, params: msgspec.Raw | None) -> object:
        return params


async def run(lines: list[bytes]) -> list[Any]:
    router = FollowUpRouter()
    client = MemoryClient(capacity=BIG)
    async with Connection(client.agent_source, client.agent_sink) as conn:
        router.conn = conn
        for line in lines:
            await client.send_line(line)
        client.close_input()
        await conn.serve(router)
    client.close_output()
    return await client.receive_all()


async def test_the_follow_up_comes_after_the_answer_and_before_the_next_message() -> None:
    frames = await run([request(1, "make"), request(2, "echo", {"x": 1})])
    assert frames == [
        {"jsonrpc": "2.0", "id": 1, "result": {"made": True}},
        {"jsonrpc": "2.0", "method": "made", "params": {"what": "it"}},
        {"jsonrpc": "2.0", "id": 2, "result": {"x": 1}},
    ]


async def test_a_failing_follow_up_is_logged_and_the_connection_goes_on() -> None:
    with capture_logs() as logs:
        frames = await run([request(1, "break"), request(2, "echo", {"y": 2})])
    assert frames == [
        {"jsonrpc": "2.0", "id": 1, "result": {"answered": True}},
        {"jsonrpc": "2.0", "id": 2, "result": {"y": 2}},
    ]
    assert [e["event"] for e in logs if e["log_level"] == "error"] == ["follow_up_failed"]
