"""The streamable-HTTP transport from raw HTTP (``httpx``): its headers, its streams, its refusals,
and SIGTERM with a prompt running on it.

The expectations are those of ``@agentclientprotocol/sdk`` 2.4.0 ``dist/transports/server.js``
(``handlePost``, ``handleGet``, ``determineRoute``) and ``connection.js`` (``routeOutbound``):
``initialize`` answered in its POST with ``Acp-Connection-Id``; other POSTs 202 with the answer
on an SSE stream; a session-scoped method without ``Acp-Session-Id`` 400; an unknown connection
404; a second receiver of one stream 409; a session's updates and answers on its own stream.
Every message the agent sent is validated against the ACP v1 schema.
"""

from __future__ import annotations

import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.integration.support import check_journal, write_script
from tests.remote.support import bearer, prompt_params, start, stop
from tests.support.acp_schema import AcpSchema
from tests.support.transcript import Transcript

pytestmark = pytest.mark.subprocess

JSON = {"Content-Type": "application/json"}
SSE = "text/event-stream"


def rpc(request_id: int | None, method: str, params: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    return message


async def events(response: httpx.Response) -> AsyncIterator[dict[str, Any]]:
    """The JSON messages of an SSE response (``data:`` lines; keep-alive comments skipped)."""
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            yield json.loads(line[6:])


async def test_streamable_http_routes_and_sigterm(
    tmp_path: Path, state_dir: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"chunks": ["work"], "hang": True})
    listener = start(script, state_dir, scheme="http")
    transcript = Transcript()
    url = listener.url
    signalled = False

    def seen(message: dict[str, Any]) -> dict[str, Any]:
        transcript.feed_agent_output(json.dumps(message).encode() + b"\n")
        return message

    async def post(
        http: httpx.AsyncClient, message: dict[str, Any], **headers: str
    ) -> httpx.Response:
        transcript.record_client_message(message)
        return await http.post(url, json=message, headers={**bearer(), **JSON, **headers})

    try:
        async with httpx.AsyncClient(timeout=20) as http:
            init = rpc(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            answer = await post(http, init)
            assert answer.status_code == 200
            seen(answer.json())
            assert answer.json()["result"]["agentCapabilities"]["loadSession"] is True
            cid = answer.headers["Acp-Connection-Id"]
            conn = {"Acp-Connection-Id": cid}
            sse = {**bearer(), **conn, "Accept": "text/event-stream"}

            unknown = await post(http, rpc(2, "session/list", {}), **{"Acp-Connection-Id": "nope"})
            assert unknown.status_code == 404
            async with http.stream("GET", url, headers=sse) as connection_stream:
                assert connection_stream.status_code == 200
                second = await http.get(url, headers=sse)
                assert second.status_code == 409  # one receiver per stream
                messages = events(connection_stream)
                new = rpc(3, "session/new", {"cwd": str(workspace), "mcpServers": []})
                assert (await post(http, new, **conn)).status_code == 202
                created = seen(await anext(messages))
                assert created["id"] == 3
                sid = created["result"]["sessionId"]

                prompt = rpc(4, "session/prompt", prompt_params(sid, "long"))
                missing = await post(http, prompt, **conn)
                assert missing.status_code == 400  # session-scoped without Acp-Session-Id
                session = {**conn, "Acp-Session-Id": sid}
                async with http.stream("GET", url, headers={**sse, **session}) as session_stream:
                    updates = events(session_stream)
                    assert (await post(http, prompt, **session)).status_code == 202
                    while True:
                        message = seen(await anext(updates))
                        update = message.get("params", {}).get("update", {})
                        if update.get("sessionUpdate") == "agent_message_chunk":
                            break
                    listener.process.send_signal(signal.SIGTERM)
                    signalled = True
                    with anyio.fail_after(10):
                        while "id" not in (message := seen(await anext(updates))):
                            pass
                    assert message == {
                        "jsonrpc": "2.0",
                        "id": 4,
                        "result": {"stopReason": "cancelled"},
                    }
                    async for message in updates:  # the stream ends with the connection
                        seen(message)
    finally:
        assert stop(listener, signalled=signalled) == 0, listener.log_text()
    transcript.end_agent_output()
    transcript.validate(acp_schema)
    assert check_journal(state_dir, sid, workspace).end_reasons() == ["cancelled"]


async def test_closing_the_connection_stream_keeps_the_connection(
    tmp_path: Path, state_dir: Path, workspace: Path
) -> None:
    """As the SDK's reference server (``server.js``: only ``handleDelete`` removes a connection)
    and the RFD: the connection stream closing, or never being opened, does not end the
    connection; the answers wait for the next receiver. Only ``DELETE`` ends it."""
    script = write_script(tmp_path / "s.jsonl", {"text": "done"})
    listener = start(script, state_dir, "--detach-grace", "0", scheme="http")
    url = listener.url
    try:
        async with httpx.AsyncClient(timeout=20) as http:
            init = rpc(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            answer = await http.post(url, json=init, headers={**bearer(), **JSON})
            conn = {"Acp-Connection-Id": answer.headers["Acp-Connection-Id"]}
            sse = {**bearer(), **conn, "Accept": "text/event-stream"}
            new = rpc(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
            posted = await http.post(url, json=new, headers={**bearer(), **JSON, **conn})
            assert posted.status_code == 202  # no stream was ever opened: still a connection
            async with http.stream("GET", url, headers=sse) as connection_stream:
                created = await anext(events(connection_stream))
            assert created["id"] == 2
            listed = rpc(3, "session/list", {})
            after = await http.post(url, json=listed, headers={**bearer(), **JSON, **conn})
            assert after.status_code == 202  # the connection stream closed: still a connection
            async with http.stream("GET", url, headers=sse) as connection_stream:
                sessions = await anext(events(connection_stream))
            assert sessions["id"] == 3
            assert [s["sessionId"] for s in sessions["result"]["sessions"]] == [
                created["result"]["sessionId"]
            ]
            ended = await http.delete(url, headers={**bearer(), **conn})
            assert ended.status_code == 202
            with anyio.fail_after(10):
                while True:  # DELETE ends it: the id is unknown once the connection is gone
                    late = await http.post(url, json=listed, headers={**bearer(), **JSON, **conn})
                    if late.status_code == 404:
                        break
                    await anyio.sleep(0.05)
    finally:
        assert stop(listener) == 0, listener.log_text()


async def test_delete_ends_the_connection_and_its_turn(
    tmp_path: Path, state_dir: Path, workspace: Path
) -> None:
    """With ``--detach-grace 0`` a ``DELETE`` is §10's drop: the running turn is cancelled."""
    script = write_script(tmp_path / "s.jsonl", {"chunks": ["work"], "hang": True})
    listener = start(script, state_dir, "--detach-grace", "0", scheme="http")
    url = listener.url
    try:
        async with httpx.AsyncClient(timeout=20) as http:
            init = rpc(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            answer = await http.post(url, json=init, headers={**bearer(), **JSON})
            conn = {"Acp-Connection-Id": answer.headers["Acp-Connection-Id"]}
            sse = {**bearer(), **conn, "Accept": "text/event-stream"}
            async with http.stream("GET", url, headers=sse) as connection_stream:
                messages = events(connection_stream)
                new = rpc(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
                await http.post(url, json=new, headers={**bearer(), **JSON, **conn})
                created = await anext(messages)
                sid = created["result"]["sessionId"]
                session = {**conn, "Acp-Session-Id": sid}
                prompt = rpc(3, "session/prompt", prompt_params(sid, "long"))
                async with http.stream("GET", url, headers={**sse, **session}) as session_stream:
                    updates = events(session_stream)
                    await http.post(url, json=prompt, headers={**bearer(), **JSON, **session})
                    while True:  # the turn streams: it is running when the client leaves
                        update = (await anext(updates)).get("params", {}).get("update", {})
                        if update.get("sessionUpdate") == "agent_message_chunk":
                            break
                    assert (await http.delete(url, headers={**bearer(), **conn})).status_code == 202
            gone = rpc(4, "session/cancel", {"sessionId": sid})
            with anyio.fail_after(10):
                while True:
                    late = await http.post(url, json=gone, headers={**bearer(), **JSON, **session})
                    if late.status_code == 404:
                        break
                    await anyio.sleep(0.05)
    finally:
        assert stop(listener) == 0, listener.log_text()
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["cancelled"]  # the dropped connection's turn


async def test_a_detached_connection_is_taken_over_at_once(
    tmp_path: Path, state_dir: Path, workspace: Path
) -> None:
    """§13 over HTTP: a connection with no stream open is detached; another connection's
    ``session/resume`` takes its running session over at once (``runningTurn``), the old
    connection's later requests for it are refused, the turn's end reaches the new one as
    ``_acp_agent/turn_ended``, and ``DELETE`` ends the old connection."""
    script = write_script(tmp_path / "s.jsonl", {"chunks": ["work"], "hang": True})
    listener = start(script, state_dir, "--detach-grace", "60", scheme="http")
    url = listener.url

    async def connect(http: httpx.AsyncClient) -> dict[str, str]:
        init = rpc(1, "initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        answer = await http.post(url, json=init, headers={**bearer(), **JSON})
        return {"Acp-Connection-Id": answer.headers["Acp-Connection-Id"]}

    def stream(http: httpx.AsyncClient, headers: dict[str, str]) -> Any:
        return http.stream("GET", url, headers={**bearer(), **headers, "Accept": SSE})

    async def post(http: httpx.AsyncClient, message: dict[str, Any], **headers: str) -> int:
        sent = await http.post(url, json=message, headers={**bearer(), **JSON, **headers})
        return sent.status_code

    try:
        async with httpx.AsyncClient(timeout=20) as http:
            old = await connect(http)
            async with stream(http, old) as connection_stream:
                new = rpc(2, "session/new", {"cwd": str(workspace), "mcpServers": []})
                await post(http, new, **old)
                sid = (await anext(events(connection_stream)))["result"]["sessionId"]
                old_session = {**old, "Acp-Session-Id": sid}
                async with stream(http, old_session) as session_stream:
                    updates = events(session_stream)
                    await post(
                        http, rpc(3, "session/prompt", prompt_params(sid, "go")), **old_session
                    )
                    while (await anext(updates)).get("params", {}).get("update", {}).get(
                        "sessionUpdate"
                    ) != "agent_message_chunk":
                        pass
            # no stream of the old connection is open: it is detached
            fresh = await connect(http)
            fresh_session = {**fresh, "Acp-Session-Id": sid}
            resume = rpc(2, "session/resume", {"sessionId": sid, "cwd": str(workspace)})
            async with stream(http, fresh_session) as session_stream:
                messages = events(session_stream)
                assert await post(http, resume, **fresh_session) == 202
                with anyio.fail_after(10):
                    while "id" not in (answer := await anext(messages)):
                        pass
                assert answer["result"]["_meta"]["acp_agent"]["runningTurn"] == {"turn": 1}
                mode = {"sessionId": sid, "modeId": "read-only"}
                assert await post(http, rpc(4, "session/set_mode", mode), **old_session) == 202
                async with stream(http, old_session) as old_stream:
                    refused = await anext(events(old_stream))
                assert refused["id"] == 4 and "error" in refused  # the session is not its own
                await post(http, rpc(None, "session/cancel", {"sessionId": sid}), **fresh_session)
                with anyio.fail_after(10):
                    while (ended := await anext(messages)).get("method") != "_acp_agent/turn_ended":
                        pass
                assert ended["params"] == {"sessionId": sid, "turn": 1, "stopReason": "cancelled"}
            assert (await http.delete(url, headers={**bearer(), **old})).status_code == 202
    finally:
        assert stop(listener) == 0, listener.log_text()
    assert check_journal(state_dir, sid, workspace).end_reasons() == ["cancelled"]
