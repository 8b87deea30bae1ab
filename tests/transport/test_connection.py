from __future__ import annotations

from typing import Any

import anyio
import msgspec
import pytest
from structlog.testing import capture_logs

from acp_agent.errors import InvalidPeerResult, PeerError, WireClosed
from acp_agent.transport.connection import Connection, ServeEnd
from acp_agent.transport.memory import MemoryClient
from tests.transport.support import BIG, ToyRouter, exchange, request

AFTER = request("after", "echo", {"ok": True})
AFTER_ANSWER = {"jsonrpc": "2.0", "id": "after", "result": {"ok": True}}

PARSE, INVALID, NOT_FOUND = -32700, -32600, -32601

# (line, code of the answer or None for no answer, id of the answer, data.reason for -32600)
TABLE: list[tuple[bytes, int | None, object, str | None]] = [
    # blank: ignored
    (b"", None, None, None),
    (b"  \t ", None, None, None),
    (b" \r", None, None, None),
    # not JSON / not UTF-8: -32700, id null
    (b"\xff\xfe", PARSE, None, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"echo","params":"\xc3"}', PARSE, None, None),
    (b'{"jsonrpc":"2.0","id":1,', PARSE, None, None),
    (b'{"jsonrpc":"2.0" "id":1}', PARSE, None, None),
    (b'{"jsonrpc":"2.0","id":1,"method":"echo"}}', PARSE, None, None),
    (b"{'jsonrpc':'2.0'}", PARSE, None, None),
    (b"nul", PARSE, None, None),
    # JSON but not an object: -32600, id null
    (b"1", INVALID, None, "not_an_object"),
    (b'"echo"', INVALID, None, "not_an_object"),
    (b"null", INVALID, None, "not_an_object"),
    (b"true", INVALID, None, "not_an_object"),
    (b"[]", INVALID, None, "not_an_object"),
    (b'[{"jsonrpc":"2.0","id":1,"method":"echo"}]', INVALID, None, "not_an_object"),
    # an object, but not a message: -32600 with the id when usable
    (b"{}", INVALID, None, "bad_version"),
    (b'{"id":7,"method":"echo"}', INVALID, 7, "bad_version"),
    (b'{"jsonrpc":"1.0","id":"a","method":"echo"}', INVALID, "a", "bad_version"),
    (b'{"jsonrpc":2,"id":8,"method":"echo"}', INVALID, 8, "bad_version"),
    (b'{"method":"note"}', INVALID, None, "bad_version"),
    (b'{"jsonrpc":"2.0","id":9,"method":5}', INVALID, 9, "bad_method"),
    (b'{"jsonrpc":"2.0","id":"m","method":null}', INVALID, "m", "bad_method"),
    (b'{"jsonrpc":"2.0","method":{}}', INVALID, None, "bad_method"),
    (b'{"jsonrpc":"2.0","id":1.5,"method":"echo"}', INVALID, None, "bad_id"),
    (b'{"jsonrpc":"2.0","id":true,"method":"echo"}', INVALID, None, "bad_id"),
    (b'{"jsonrpc":"2.0","id":{},"method":"echo"}', INVALID, None, "bad_id"),
    (b'{"jsonrpc":"2.0","id":[1],"method":"echo"}', INVALID, None, "bad_id"),
    (
        b'{"jsonrpc":"2.0","id":11,"result":1,"error":{"code":1,"message":"x"}}',
        INVALID,
        11,
        "result_and_error",
    ),
    (b'{"jsonrpc":"2.0","id":12}', INVALID, 12, "no_method_or_result"),
    (b'{"jsonrpc":"2.0"}', INVALID, None, "missing_id"),
    (b'{"jsonrpc":"2.0","result":{}}', INVALID, None, "missing_id"),
    (b'{"jsonrpc":"2.0","id":"s","error":{"code":"x"}}', INVALID, "s", "bad_error_object"),
    # unknown request: -32601; unknown notification: nothing
    (b'{"jsonrpc":"2.0","id":13,"method":"nope"}', NOT_FOUND, 13, None),
    (b'{"jsonrpc":"2.0","id":"u","method":"_x/unknown","params":{}}', NOT_FOUND, "u", None),
    (b'{"jsonrpc":"2.0","method":"_x/unknown","params":{}}', None, None, None),
    (b'{"jsonrpc":"2.0","method":"nope"}', None, None, None),
    # responses to requests we never sent: dropped
    (b'{"jsonrpc":"2.0","id":99,"result":{}}', None, None, None),
    (
        b'{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}',
        None,
        None,
        None,
    ),
]


@pytest.mark.parametrize(("line", "code", "id_", "reason"), TABLE)
async def test_input_table(line: bytes, code: int | None, id_: object, reason: str | None) -> None:
    frames = await exchange([line, AFTER])
    assert frames[-1] == AFTER_ANSWER, "serving goes on after any line"
    if code is None:
        assert frames == [AFTER_ANSWER]
        return
    assert len(frames) == 2
    answer = frames[0]
    assert answer["jsonrpc"] == "2.0" and answer["id"] == id_ and "result" not in answer
    assert answer["error"]["code"] == code
    assert isinstance(answer["error"]["message"], str)
    if reason is not None:
        assert answer["error"]["data"] == {"reason": reason}


async def test_extra_members_and_meta_are_accepted() -> None:
    line = (
        b'{"jsonrpc":"2.0","id":1,"method":"echo","params":{"_meta":{"a":1}},"extra":[],"_meta":{}}'
    )
    assert await exchange([line]) == [{"jsonrpc": "2.0", "id": 1, "result": {"_meta": {"a": 1}}}]


async def test_notification_is_handled_and_never_answered() -> None:
    router = ToyRouter()
    line = b'{"jsonrpc":"2.0","method":"note","params":{"n":1}}'
    failing = b'{"jsonrpc":"2.0","method":"note","params":{"fail":"bug"}}'
    with capture_logs() as logs:
        assert await exchange([line, failing, AFTER], router) == [AFTER_ANSWER]
    assert router.notes == [{"n": 1}]
    assert [e["event"] for e in logs if e["event"] == "handler_failed"] == ["handler_failed"]


async def test_line_too_long_is_answered_and_serving_goes_on() -> None:
    long_request = request(1, "echo", {"pad": "x" * 5000})
    with capture_logs() as logs:
        frames = await exchange([long_request, AFTER], max_line_bytes=1024)
    assert frames == [
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": INVALID,
                "message": "Invalid request",
                "data": {"reason": "line_too_long"},
            },
        },
        AFTER_ANSWER,
    ]
    assert any(e["event"] == "frame_rejected" for e in logs)


async def test_80_mib_line_with_the_default_cap() -> None:
    client = MemoryClient()
    block = b"x" * (1 << 20)

    async def feed() -> None:
        await client.to_agent.write(b'{"jsonrpc":"2.0","id":0,"method":"echo","params":"')
        for _ in range(80):
            await client.to_agent.write(block)
        await client.send_line(b'"}')
        await client.send_line(AFTER)
        client.close_input()

    async with Connection(client.agent_source, client.agent_sink) as conn:
        async with anyio.create_task_group() as tg:
            tg.start_soon(feed)
            assert await conn.serve(ToyRouter()) is ServeEnd.EOF
        first, second = await client.receive(), await client.receive()
    assert (first["id"], first["error"]["data"]) == (None, {"reason": "line_too_long"})
    assert second == AFTER_ANSWER


async def test_requests_are_answered_in_order() -> None:
    frames = await exchange([request(i, "echo", [i]) for i in range(200)])
    assert frames == [{"jsonrpc": "2.0", "id": i, "result": [i]} for i in range(200)]


async def test_dispatch_is_sequential() -> None:
    frames = await exchange([request(1, "set", {"v": 1}), request(2, "get")])
    assert frames[1] == {"jsonrpc": "2.0", "id": 2, "result": {"v": 1}}


@pytest.mark.parametrize("method", ["echo", "slow"])
async def test_handler_errors(method: str) -> None:
    with capture_logs() as logs:
        frames = await exchange(
            [request(1, method, {"fail": "rpc"}), request(2, method, {"fail": "bug"})]
        )
    assert frames[0]["error"] == {
        "code": -32602,
        "message": "Invalid params",
        "data": {"path": "$.fail"},
    }
    assert frames[1]["error"] == {"code": -32603, "message": "Internal error"}
    failures = [e for e in logs if e["event"] == "handler_failed"]
    assert len(failures) == 1 and failures[0]["exc_info"] is True


async def test_unencodable_result_is_an_internal_error() -> None:
    with capture_logs() as logs:
        frames = await exchange([request(1, "odd"), AFTER])
    assert frames == [
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "Internal error"}},
        AFTER_ANSWER,
    ]
    assert any(e["event"] == "handler_failed" for e in logs)


async def test_deferred_answers_later_and_survives_eof() -> None:
    router = ToyRouter()
    client = MemoryClient()
    async with Connection(client.agent_source, client.agent_sink) as conn:
        await client.send_line(request(1, "slow", {"n": 1}))
        await client.send_line(request(2, "echo", 2))
        client.close_input()
        assert await conn.serve(router) is ServeEnd.EOF
        assert await client.receive() == {"jsonrpc": "2.0", "id": 2, "result": 2}
        router.release.set()
        await conn.wait_deferred()
        assert await client.receive() == {"jsonrpc": "2.0", "id": 1, "result": {"slow": {"n": 1}}}


async def test_leaving_the_block_cancels_unfinished_deferred_requests() -> None:
    client = MemoryClient()
    async with Connection(client.agent_source, client.agent_sink) as conn:
        await client.send_line(request(1, "slow"))
        await client.send_line(AFTER)
        client.close_input()
        await conn.serve(ToyRouter())
    client.close_output()
    assert await client.receive_all() == [AFTER_ANSWER]


class Answer(msgspec.Struct, frozen=True):
    content: str


async def test_outgoing_requests_are_correlated() -> None:
    client = MemoryClient()
    results: dict[str, Answer] = {}
    async with Connection(client.agent_source, client.agent_sink) as conn:

        async def ask(path: str) -> None:
            results[path] = await conn.request("fs/read_text_file", {"path": path}, Answer)

        async with anyio.create_task_group() as tg:
            tg.start_soon(conn.serve, ToyRouter())
            tg.start_soon(ask, "a")
            first = await client.receive()
            tg.start_soon(ask, "b")
            second = await client.receive()
            assert (first["id"], second["id"]) == (1, 2)
            assert first["method"] == "fs/read_text_file" and first["params"] == {"path": "a"}
            for sent in (second, first):
                content = "content of " + sent["params"]["path"]
                await client.send(
                    {"jsonrpc": "2.0", "id": sent["id"], "result": {"content": content}}
                )
            await client.send_line(AFTER)
            assert await client.receive() == AFTER_ANSWER
            client.close_input()
    assert results == {"a": Answer("content of a"), "b": Answer("content of b")}


async def _one_request_answered_with(answer: dict[str, Any]) -> BaseException | Answer:
    client = MemoryClient()
    outcome: list[BaseException | Answer] = []
    async with (
        Connection(client.agent_source, client.agent_sink) as conn,
        anyio.create_task_group() as tg,
    ):
        tg.start_soon(conn.serve, ToyRouter())

        async def ask() -> None:
            try:
                outcome.append(await conn.request("x/ask", None, Answer))
            except (PeerError, WireClosed) as exc:
                outcome.append(exc)

        tg.start_soon(ask)
        sent = await client.receive()
        assert "params" not in sent
        await client.send({"jsonrpc": "2.0", "id": sent["id"], **answer})
        await client.send_line(AFTER)
        assert await client.receive() == AFTER_ANSWER
        client.close_input()
    return outcome[0]


async def test_error_response_raises_peer_error() -> None:
    outcome = await _one_request_answered_with(
        {"error": {"code": -32002, "message": "gone", "data": {"k": 1}}}
    )
    assert isinstance(outcome, PeerError) and not isinstance(outcome, InvalidPeerResult)
    assert (outcome.code, outcome.message, outcome.data) == (-32002, "gone", {"k": 1})


async def test_result_of_the_wrong_shape_raises_invalid_peer_result() -> None:
    outcome = await _one_request_answered_with({"result": {"content": 5}})
    assert isinstance(outcome, InvalidPeerResult)


async def test_unknown_response_id_is_dropped_and_logged() -> None:
    with capture_logs() as logs:
        frames = await exchange([b'{"jsonrpc":"2.0","id":42,"result":{"content":"x"}}', AFTER])
    assert frames == [AFTER_ANSWER]
    assert [e["id"] for e in logs if e["event"] == "response_dropped"] == [42]


async def test_eof_fails_pending_and_later_outgoing_requests() -> None:
    client = MemoryClient()
    async with Connection(client.agent_source, client.agent_sink) as conn:
        failures: list[WireClosed] = []

        async def ask() -> None:
            with pytest.raises(WireClosed) as info:
                await conn.request("x/ask", {}, Answer)
            failures.append(info.value)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            await client.receive()
            client.close_input()
            assert await conn.serve(ToyRouter()) is ServeEnd.EOF
        assert len(failures) == 1
        with pytest.raises(WireClosed):
            await conn.request("x/ask", {}, Answer)


class GatedSink:
    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.writes: list[bytes] = []

    async def __call__(self, data: bytes) -> None:
        await self.gate.wait()
        self.writes.append(data)


async def test_backpressure_waits_and_keeps_order() -> None:
    sink = GatedSink()
    client = MemoryClient()
    sent = 0
    async with Connection(client.agent_source, sink, queue_frames=4) as conn:

        async def produce() -> None:
            nonlocal sent
            for i in range(50):
                await conn.notify("n", {"i": i})
                sent += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            await anyio.wait_all_tasks_blocked()
            # the queue's 4 frames, plus at most one batch (<= 4) taken by the blocked sink
            assert 4 <= sent <= 8, "the producer waits once the queue is full"
            sink.gate.set()
    frames = [msgspec.json.decode(line) for line in b"".join(sink.writes).splitlines()]
    assert frames == [{"jsonrpc": "2.0", "method": "n", "params": {"i": i}} for i in range(50)]
    assert len(sink.writes) < 50, "frames are written in batches"


async def test_a_block_of_frames_counts_each_frame_against_the_queue() -> None:
    # writer.py: the capacity bounds frames, and a block (notify_all, a replay) holds many.
    sink = GatedSink()
    client = MemoryClient()
    blocks = 0
    async with Connection(client.agent_source, sink, queue_frames=8) as conn:

        async def produce() -> None:
            nonlocal blocks
            for b in range(10):
                await conn.notify_all("n", [{"b": b, "i": i} for i in range(4)])
                blocks += 1

        async with anyio.create_task_group() as tg:
            tg.start_soon(produce)
            await anyio.wait_all_tasks_blocked()
            # 8 frames queued (2 blocks), plus at most one batch (<= 8 frames) at the sink
            assert 2 <= blocks <= 4, "the producer waits once the queue holds 8 frames"
            sink.gate.set()
    frames = [msgspec.json.decode(line) for line in b"".join(sink.writes).splitlines()]
    expected = [{"b": b, "i": i} for b in range(10) for i in range(4)]
    assert frames == [{"jsonrpc": "2.0", "method": "n", "params": p} for p in expected]


async def test_broken_wire_is_reported_once_and_stops_serving() -> None:
    client = MemoryClient()
    with capture_logs() as logs:
        async with Connection(client.agent_source, client.agent_sink) as conn:
            ends: list[ServeEnd] = []

            async def serve() -> None:
                ends.append(await conn.serve(ToyRouter()))

            async with anyio.create_task_group() as tg:
                tg.start_soon(serve)
                client.stop_reading()
                await conn.notify("n", 1)
                await conn.wire_closed.wait()
                for i in range(20):
                    await conn.notify("n", i)  # dropped, never raises
                with pytest.raises(WireClosed):
                    await conn.request("x/ask", {}, Answer)
    assert ends == [ServeEnd.WIRE_CLOSED]
    assert [e["event"] for e in logs].count("wire_closed") == 1


async def test_deferred_answer_after_a_broken_wire_is_dropped() -> None:
    router = ToyRouter()
    client = MemoryClient(capacity=BIG)
    async with Connection(client.agent_source, client.agent_sink) as conn:
        await client.send_line(request(1, "slow"))
        client.close_input()
        await conn.serve(router)
        client.stop_reading()
        await conn.notify("n")
        await conn.wire_closed.wait()
        router.release.set()
        await conn.wait_deferred()


async def test_cancelling_serve_fails_pending_outgoing_requests() -> None:
    client = MemoryClient()
    scope = anyio.CancelScope()
    async with (
        Connection(client.agent_source, client.agent_sink) as conn,
        anyio.create_task_group() as tg,
    ):

        async def serve() -> None:
            with scope:
                await conn.serve(ToyRouter())

        async def ask() -> None:
            with pytest.raises(WireClosed):
                await conn.request("x/ask", {}, Answer)

        tg.start_soon(serve)
        tg.start_soon(ask)
        await client.receive()
        scope.cancel()
