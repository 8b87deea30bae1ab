"""Hostile lines in process: the transport with a toy router, then the real ACP router.

1. ``Connection`` over the in-memory twin (``acp_agent/transport/memory.py``) with the toy router
   of ``tests/transport/support.py``: random lines (junk and ``echo``/``odd``/unknown requests)
   cut into random read sizes, under a random line cap. Every request that fits the cap is
   answered exactly once, ``echo``s with their own params and in the order sent (inline
   handlers answer in order); junk gets at most one answer; every frame is one JSON object.
2. The real ``AgentServer`` and session layer, wired by ``acp_agent/app.py`` and ``process/serving.py`` themselves
   (``serve_connection``), on the in-memory twin, a fresh state dir per example: the batches of ``strategies.lines``, checked
   like the subprocess fuzzer's (schema, one answer per request), plus the invariant of every
   journal the batch created. Each example serves until EOF and must end cleanly.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from hypothesis import given, settings, strategies as st

from acp_agent.app import serve_connection
from acp_agent.hooks.bridge import HookSet
from acp_agent.journal.invariant import check_file
from acp_agent.model.registry import ModelCatalog
from acp_agent.model.script import ScriptLine
from acp_agent.transport.connection import Connection
from acp_agent.transport.memory import MemoryClient
from tests.fuzz.strategies import (
    OMIT,
    SESSION,
    SETTINGS,
    Call,
    Expectation,
    Junk,
    Line,
    as_read,
    as_validated,
    check_answers,
    dumps,
    expectation,
    json_values,
    junk,
    lines,
    loads,
)
from tests.model.harness import server_options
from tests.reliability.support import scaled
from tests.support.acp_schema import AcpSchema
from tests.transport.support import ToyRouter

pytestmark = pytest.mark.reliability

TRANSPORT_EXAMPLES = scaled(300, 5000)
SERVER_EXAMPLES = scaled(100, 1500)
BIG = 1 << 22


# --- 1. the transport ------------------------------------------------------------------------------


toy_calls = st.builds(
    Call,
    st.sampled_from(["echo", "echo", "echo", "odd", "nope", "slow"]),
    json_values,
    st.just(True),
)


async def serve_toy(data: bytes, read_size: int, cap: int) -> list[bytes]:
    router = ToyRouter()
    router.release.set()
    client = MemoryClient(capacity=BIG, read_size=read_size)
    out: list[bytes] = []
    async with (
        Connection(client.agent_source, client.agent_sink, max_line_bytes=cap) as conn,
        anyio.create_task_group() as tg,
    ):

        async def collect() -> None:
            while (line := await client.receive_line()) is not None:
                out.append(line)

        tg.start_soon(collect)
        await client.to_agent.write(data)
        client.close_input()
        await conn.serve(router)
        await conn.wait_deferred()
        await conn.close()
        client.close_output()
    return out


@settings(SETTINGS, max_examples=TRANSPORT_EXAMPLES)
@given(
    batch=st.lists(st.one_of(toy_calls, junk), min_size=1, max_size=15),
    read_size=st.sampled_from([1, 2, 3, 7, 64, 4096, BIG]),
    cap=st.sampled_from([64, 256, 4096, BIG]),
)
def test_the_transport_answers_every_request_once_and_echoes_in_order(
    batch: list[Line], read_size: int, cap: int
) -> None:
    ids: list[int | str | None] = [
        f"toy:{n}:req" if isinstance(line, Call) else None for n, line in enumerate(batch, 1)
    ]
    encoded = [
        line.encode(request_id) if isinstance(line, Call) else line.encode()
        for line, request_id in zip(batch, ids, strict=True)
    ]
    # A request longer than the cap is answered as a line too long (-32600, id null): junk.
    fits = [len(raw) - 1 <= cap for raw in encoded]
    kept = [i if fit else None for i, fit in zip(ids, fits, strict=True)]
    as_junk = [line if fit else Junk(b"") for line, fit in zip(batch, fits, strict=True)]
    expected = expectation(as_junk, kept)
    expected.junk_lines += fits.count(False)
    data = b"".join(encoded)
    read_size = max(read_size, len(data) // 500)  # odd boundaries, at most ~500 reads
    out = anyio.run(serve_toy, data, read_size, cap)
    frames = [decode(raw) for raw in out]
    problems = check_answers(frames, expected)
    assert not problems, "\n".join(problems)
    echoes = [
        (i, line.params)
        for i, line, fit in zip(ids, batch, fits, strict=True)
        if fit and isinstance(line, Call) and line.method == "echo"
    ]
    answered = [(f["id"], f.get("result")) for f in frames if f.get("id") in dict(echoes)]
    assert [i for i, _ in answered] == [i for i, _ in echoes], "echoes answered out of order"
    for (_, sent), (_, got) in zip(echoes, answered, strict=True):
        assert got == json_roundtrip(sent), (sent, got)


def decode(raw: bytes) -> dict[str, Any]:
    frame = loads(raw)
    assert isinstance(frame, dict), raw[:200]
    assert frame.get("jsonrpc") == "2.0", frame
    return frame


def json_roundtrip(value: Any) -> Any:
    """What an echo gives back: params as JSON, read back (``null`` params are no params)."""
    if value is OMIT:
        return None
    return as_read(loads(dumps(value)))


# --- 2. the real ACP router and session layer ---------------------------------------------------


async def serve_real(data: bytes, state_dir: Path) -> list[bytes]:
    """``app.serve_connection`` with the in-memory twin for stdio; every frame the server wrote."""
    script = state_dir / "script.jsonl"
    script.write_bytes(
        b"".join(msgspec.json.encode(ScriptLine(text="ok")) + b"\n" for _ in range(200))
    )
    models = ModelCatalog(f"script:{script}", env={})
    options = server_options(state_dir)
    client = MemoryClient(capacity=BIG)
    out: list[bytes] = []
    async with anyio.create_task_group() as tg:

        async def collect() -> None:
            while (line := await client.receive_line()) is not None:
                out.append(line)

        tg.start_soon(collect)
        await client.to_agent.write(data)
        client.close_input()
        await serve_connection(
            options, models, HookSet(), client.agent_source, client.agent_sink, signals=False
        )
        client.close_output()
    return out


HANDSHAKE = (
    b'{"jsonrpc":"2.0","id":"h1","method":"initialize","params":{"protocolVersion":1}}\n'
    + msgspec.json.encode(
        {
            "jsonrpc": "2.0",
            "id": "h2",
            "method": "session/new",
            "params": {
                "cwd": "/tmp",
                "mcpServers": [],
                "_meta": {"acp_agent": {"sessionId": SESSION}},
            },
        }
    )
    + b"\n"
)


@settings(SETTINGS, max_examples=SERVER_EXAMPLES)
@given(batch=lines("/tmp"))
def test_the_acp_router_answers_every_request_once(
    batch: list[Line], acp_schema: AcpSchema
) -> None:
    ids: list[int | str | None] = [
        f"acp:{n}:req" if isinstance(line, Call) and line.is_request else None
        for n, line in enumerate(batch)
    ]
    data = HANDSHAKE + b"".join(
        line.encode(i) if isinstance(line, Call) else line.encode()
        for line, i in zip(batch, ids, strict=True)
    )
    expected = expectation(batch, ids)
    expected.requests.update({"h1": "initialize", "h2": "session/new"})
    with tempfile.TemporaryDirectory() as root:
        state_dir = Path(root)
        out = anyio.run(serve_real, data, state_dir)
        journals = sorted(state_dir.glob("sessions/*/journal.jsonl"))
        broken = {str(j): check_file(j) for j in journals if check_file(j)}
    frames = [decode(raw) for raw in out]
    check_schema(frames, expected, acp_schema)
    problems = check_answers(frames, expected)
    assert not problems, "\n".join(problems)
    assert not broken, broken


def check_schema(frames: list[dict[str, Any]], expected: Expectation, schema: AcpSchema) -> None:
    for frame in frames:
        request_id = frame.get("id")
        method = None
        if "method" not in frame and isinstance(request_id, int | str):
            method = expected.requests.get(request_id)
        if method not in schema.methods.responses:
            method = None
        problem = schema.frame_problem(as_validated(frame, expected), method)
        assert problem is None, f"{problem}\n{json.dumps(frame)[:1500]}"
