"""``$/cancel_request`` at the connection (ACP ``CancelRequestNotification``, a protocol-level
notification: schema v1 "ProtocolLevel"): sent when the task waiting for one of our requests is
cancelled; a client's one calls the ``on_cancel`` of the deferred request it names."""

from __future__ import annotations

import anyio
import msgspec
from structlog.testing import capture_logs

from acp_agent.transport.connection import Connection, Deferred, NotificationHandler
from acp_agent.transport.memory import MemoryClient
from tests.transport.support import ToyRouter, request


class Answer(msgspec.Struct, frozen=True):
    content: str


async def test_a_cancelled_wait_sends_cancel_request_and_drops_the_late_answer() -> None:
    client = MemoryClient()
    async with (
        Connection(client.agent_source, client.agent_sink) as conn,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(conn.serve, ToyRouter())
        with anyio.CancelScope() as scope:
            tg.start_soon(_cancel_after_sent, client, scope)
            await conn.request("fs/read_text_file", {"path": "a"}, Answer)
        assert scope.cancelled_caught
        assert await client.receive() == {
            "jsonrpc": "2.0",
            "method": "$/cancel_request",
            "params": {"requestId": 1},
        }
        with capture_logs() as logs:
            await client.send({"jsonrpc": "2.0", "id": 1, "result": {"content": "late"}})
            await client.send_line(request("after", "echo", 1))
            assert (await client.receive())["id"] == "after"
        assert [e["id"] for e in logs if e["event"] == "response_dropped"] == [1]
        client.close_input()


async def _cancel_after_sent(client: MemoryClient, scope: anyio.CancelScope) -> None:
    sent = await client.receive()
    assert sent["method"] == "fs/read_text_file"
    scope.cancel()


async def test_an_answered_request_sends_no_cancel_request() -> None:
    client = MemoryClient()
    async with (
        Connection(client.agent_source, client.agent_sink) as conn,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(conn.serve, ToyRouter())

        async def answer() -> None:
            sent = await client.receive()
            await client.send({"jsonrpc": "2.0", "id": sent["id"], "result": {"content": "x"}})

        tg.start_soon(answer)
        assert await conn.request("x/ask", None, Answer) == Answer("x")
        await client.send_line(request("after", "echo", 1))
        assert (await client.receive())["id"] == "after"  # nothing in between
        client.close_input()


class CancellableRouter(ToyRouter):
    """``wait`` is deferred until ``release``; its ``on_cancel`` records the cancel."""

    def __init__(self) -> None:
        super().__init__()
        self.cancels = 0
        self._requests["wait"] = self.wait

    async def wait(self, params: msgspec.Raw | None) -> object:
        async def cancel() -> None:
            self.cancels += 1
            self.release.set()

        async def answer() -> object:
            await self.release.wait()
            return {"cancelled": self.cancels > 0}

        return Deferred(answer(), on_cancel=cancel)

    def notification_handler(self, method: str) -> NotificationHandler | None:
        assert method != "$/cancel_request", "the connection handles it, never the router"
        return super().notification_handler(method)


def cancel_request(request_id: object) -> bytes:
    return msgspec.json.encode(
        {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": request_id}}
    )


async def test_a_client_cancel_request_calls_the_deferred_on_cancel() -> None:
    router = CancellableRouter()
    client = MemoryClient()
    async with Connection(client.agent_source, client.agent_sink) as conn:
        with capture_logs() as logs:
            await client.send_line(request("p", "wait"))
            await client.send_line(cancel_request("nobody"))  # not pending: ignored
            await client.send_line(cancel_request("p"))
            client.close_input()
            await conn.serve(router)
            await conn.wait_deferred()
    assert await client.receive() == {"jsonrpc": "2.0", "id": "p", "result": {"cancelled": True}}
    assert router.cancels == 1
    events = [(e["event"], e.get("id")) for e in logs if e["event"].startswith("cancel_request")]
    assert events == [("cancel_request_ignored", "nobody"), ("cancel_request_honoured", "p")]


async def test_a_malformed_cancel_request_is_logged_and_serving_goes_on() -> None:
    router = CancellableRouter()
    client = MemoryClient()
    async with Connection(client.agent_source, client.agent_sink) as conn:
        with capture_logs() as logs:
            await client.send_line(b'{"jsonrpc":"2.0","method":"$/cancel_request","params":{}}')
            await client.send_line(request("after", "echo", 1))
            client.close_input()
            await conn.serve(router)
    assert await client.receive() == {"jsonrpc": "2.0", "id": "after", "result": 1}
    assert any(e["event"] == "cancel_request_rejected" for e in logs)
