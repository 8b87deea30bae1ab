"""``serve --listen`` against clients that misbehave, and many at once (docs/contract.md §10).

A raw WebSocket client (``websockets``) and raw HTTP (``httpx``) against the real agent:

- the token: missing or wrong → HTTP 401 and no ACP frame, on the WebSocket handshake and on
  the streamable-HTTP endpoint alike; the token file's surrounding whitespace is stripped;
- ``Origin``: one outside the allow-list → 403, one inside (``--allow-origin``) accepted;
- a frame over ``--max-line-bytes`` closes that WebSocket with 1009 (RFC 6455 §7.4.1, "message
  too big"), a POST over it is answered -32600; other connections go on being served;
- a binary frame closes with 1003 (RFC 6455 §7.4.1: "a type of data it cannot accept");
- a client that stops reading in the middle of a long stream does not delay another one;
- a second live ``session/load`` of a session another connection drives is refused
  (-32603, ``data.reason: "journal_locked"``: docs/remote.md);
- 50 connections, each with a session and a prompt, all answered;
- SIGTERM with a prompt running: it is answered ``cancelled`` on its connection, the socket is
  closed, the journal says ``cancelled``, exit 0 (§1, §10);
- a non-loopback address without a token refuses to start, saying a token is required.

Every frame the agent sent on these connections is validated against the ACP v1 schema.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import anyio
import httpx
import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from acp_agent.journal.invariant import check_file
from tests.integration import stuck_thread_agent
from tests.integration.support import check_journal, read_jsonl, write_script
from tests.remote.support import (
    TOKEN,
    WsPeer,
    bearer,
    listening,
    peer,
    prompt_params,
    start,
    stop,
)
from tests.support.acp_schema import AcpSchema
from tests.support.process import agent_command

pytestmark = pytest.mark.subprocess


async def _prompted(client: WsPeer, cwd: Path, text: str) -> tuple[str, dict[str, object]]:
    await client.initialize()
    session_id = await client.new_session(cwd)
    answer = await client.call("session/prompt", prompt_params(session_id, text))
    return session_id, answer


async def test_missing_or_wrong_token_is_401_without_a_frame(
    tmp_path: Path, state_dir: Path
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "unused"})
    with listening(script, state_dir) as agent:
        for token in (None, "wrong-token", TOKEN + "x"):
            with pytest.raises(InvalidStatus) as refused:
                async with peer(agent.ws_url, token=token):
                    pass
            assert refused.value.response.status_code == 401
            assert b"jsonrpc" not in refused.value.response.body
        init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
        async with httpx.AsyncClient() as http:
            for headers in ({}, bearer("nope"), {"Authorization": TOKEN}):
                answer = await http.post(agent.url, json=init, headers=headers)
                assert answer.status_code == 401
                assert "Acp-Connection-Id" not in answer.headers
                assert b"jsonrpc" not in answer.content


async def test_token_file_is_stripped_and_origin_is_checked(
    tmp_path: Path, state_dir: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("  file-token \n")
    script = write_script(tmp_path / "s.jsonl", {"text": "hi"})
    args = ("--token-file", str(token_file), "--allow-origin", "https://editor.example")
    with listening(script, state_dir, *args) as agent:
        with pytest.raises(InvalidStatus) as refused:
            async with peer(agent.ws_url, token=TOKEN):  # the env token loses to the file
                pass
        assert refused.value.response.status_code == 401
        with pytest.raises(InvalidStatus) as foreign:
            async with peer(agent.ws_url, token="file-token", origin="https://evil.example"):
                pass
        assert foreign.value.response.status_code == 403
        async with peer(agent.ws_url, token="file-token", origin="https://editor.example") as ok:
            _, answer = await _prompted(ok, workspace, "hello")
            assert answer["result"] == {"stopReason": "end_turn"}
            ok.validate(acp_schema)


async def test_oversized_frame_closes_1009_and_others_are_served(
    tmp_path: Path, state_dir: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "still here"})
    with listening(script, state_dir, "--max-line-bytes", "4096") as agent:
        async with peer(agent.ws_url) as other, peer(agent.ws_url, max_size=None) as big:
            await other.initialize()
            await big.initialize()
            huge = prompt_params("x", "y" * 10_000)
            await big.send({"jsonrpc": "2.0", "id": 9, "method": "session/prompt", "params": huge})
            with pytest.raises(ConnectionClosed) as closed:
                await big.receive()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
            session_id = await other.new_session(workspace)
            answer = await other.call("session/prompt", prompt_params(session_id, "and you?"))
            assert answer["result"] == {"stopReason": "end_turn"}
            other.validate(acp_schema)
            big.validate(acp_schema)
        async with httpx.AsyncClient() as http:
            body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": huge})
            headers = {**bearer(), "Content-Type": "application/json"}
            answer = await http.post(agent.url, content=body, headers=headers)
            assert answer.status_code == 413
            assert answer.json()["error"]["code"] == -32600


async def test_binary_frame_closes_1003(tmp_path: Path, state_dir: Path) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "unused"})
    with listening(script, state_dir) as agent:
        async with peer(agent.ws_url) as client:
            await client.ws.send(b'{"jsonrpc":"2.0","id":1,"method":"initialize"}')
            with pytest.raises(ConnectionClosed) as closed:
                await client.receive()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1003


CHUNK = "z" * 32_000
CHUNKS = 2000
"""64 MB: about twice what the stalled connection's frame queue (1024 frames, 32 MB) and the
socket buffers (a 64 KiB receive buffer, and the agent's send buffer: 4 MiB at most by default)
hold, so its turn must wait for its reader."""


@pytest.mark.timeout(120)  # 64 MB through a Python client, on a loaded machine
async def test_a_client_that_stops_reading_does_not_delay_another(
    tmp_path: Path, state_dir: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    script = write_script(
        tmp_path / "s.jsonl", {"chunks": [CHUNK] * CHUNKS}, {"text": "not delayed"}
    )
    requests = tmp_path / "requests.jsonl"
    listener = start(script, state_dir, env={"ACP_AGENT_SCRIPT_REQUESTS": str(requests)})
    try:
        # max_queue=1: the client stops taking frames off the socket while it does not read.
        stalling = peer(listener.ws_url, max_queue=1, rcvbuf=64 * 1024)
        async with stalling as stalled, peer(listener.ws_url) as other:
            await stalled.initialize()
            stalled_id = await stalled.new_session(workspace)
            prompt = await stalled.request("session/prompt", prompt_params(stalled_id, "a lot"))
            while not (requests.exists() and read_jsonl(requests)):  # noqa: ASYNC110 (a file)
                await anyio.sleep(0.05)  # the stalled turn asked the model first

            _, answer = await _prompted(other, workspace, "quick one")
            assert answer["result"] == {"stopReason": "end_turn"}
            texts = [
                u["content"]["text"]
                for u in other.transcript.session_updates()
                if u["sessionUpdate"] == "agent_message_chunk"
            ]
            assert texts == ["not delayed"]
            journal = (state_dir / "sessions" / stalled_id / "journal.jsonl").read_bytes()
            assert b'"turn/end"' not in journal  # the stalled turn still waits for its reader

            answer = await stalled.answer_of(prompt)
            assert answer["result"] == {"stopReason": "end_turn"}
            streamed = [
                u["content"]["text"]
                for u in stalled.transcript.session_updates()
                if u["sessionUpdate"] == "agent_message_chunk"
            ]
            assert "".join(streamed) == CHUNK * CHUNKS
            other.validate(acp_schema)
            stalled.validate(acp_schema)
    finally:
        assert stop(listener) == 0, listener.log_text()


async def test_a_live_session_is_driven_by_one_connection(
    tmp_path: Path, state_dir: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "mine"}, {"text": "now yours"})
    with listening(script, state_dir) as agent:
        async with peer(agent.ws_url) as owner:
            session_id, _ = await _prompted(owner, workspace, "first")
            async with peer(agent.ws_url) as intruder:
                await intruder.initialize()
                load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
                refused = await intruder.call("session/load", load)
                assert refused["error"]["code"] == -32603
                assert refused["error"]["data"]["reason"] == "journal_locked"
                assert "another connection" in refused["error"]["message"]
                prompt = await intruder.call("session/prompt", prompt_params(session_id, "hey"))
                assert prompt["error"]["code"] == -32002  # not a session of this connection
                intruder.validate(acp_schema)
            owner.validate(acp_schema)
        async with peer(agent.ws_url) as successor:  # the owner left: the session is free
            await successor.initialize()
            load = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
            assert "result" in await successor.call("session/load", load)
            answer = await successor.call("session/prompt", prompt_params(session_id, "again"))
            assert answer["result"] == {"stopReason": "end_turn"}
            successor.validate(acp_schema)
    assert check_journal(state_dir, session_id).end_reasons() == ["completed", "completed"]


CONNECTIONS = 50


async def test_fifty_connections_each_with_a_prompt(
    tmp_path: Path, state_dir: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    script = write_script(tmp_path / "s.jsonl", *[{"chunks": ["an", "swer"]}] * CONNECTIONS)
    answers: dict[str, tuple[WsPeer, dict[str, object]]] = {}

    async def one(url: str) -> None:
        async with peer(url) as client:
            session_id, answer = await _prompted(client, workspace, "hi")
            answers[session_id] = (client, answer)

    with listening(script, state_dir, "--log-level", "warning") as agent:
        async with anyio.create_task_group() as tg:
            for _ in range(CONNECTIONS):
                tg.start_soon(one, agent.ws_url)
    assert len(answers) == CONNECTIONS
    for session_id, (client, answer) in answers.items():
        assert answer["result"] == {"stopReason": "end_turn"}
        client.validate(acp_schema)
        updates = [f for f in client.transcript.agent_frames if f.get("method") == "session/update"]
        assert {f["params"]["sessionId"] for f in updates} == {session_id}  # its own only
        texts = [
            u["content"]["text"]
            for u in client.transcript.session_updates()
            if u["sessionUpdate"] == "agent_message_chunk"
        ]
        assert texts == ["an", "swer"]


async def test_sigterm_answers_running_prompts_cancelled_and_exits_0(
    tmp_path: Path, state_dir: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"chunks": ["work"], "hang": True})
    listener = start(script, state_dir)
    try:
        async with peer(listener.ws_url) as client:
            await client.initialize()
            session_id = await client.new_session(workspace)
            prompt = await client.request("session/prompt", prompt_params(session_id, "long"))
            while True:
                frame = await client.receive()
                update = frame.get("params", {}).get("update", {})
                if update.get("sessionUpdate") == "agent_message_chunk":
                    break
            listener.process.send_signal(signal.SIGTERM)
            answer = await client.answer_of(prompt)
            assert answer["result"]["stopReason"] == "cancelled"
            with pytest.raises(ConnectionClosed) as closed:
                await client.receive()
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1001
            client.validate(acp_schema)
    finally:
        assert stop(listener, signalled=True) == 0, listener.log_text()
    assert check_journal(state_dir, session_id, workspace).end_reasons() == ["cancelled"]


def test_non_loopback_without_a_token_refuses_to_start(tmp_path: Path, state_dir: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACP_AGENT_")}
    env["ACP_AGENT_STATE_DIR"] = str(state_dir)
    completed = subprocess.run(
        agent_command("serve", "--listen", "ws://0.0.0.0:0", "--model", "script:/nonexistent"),
        env=env,
        capture_output=True,
        text=True,
        timeout=20,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert completed.returncode != 0
    assert "a token is required" in completed.stderr
    assert "listening on" not in completed.stderr


async def test_sigterm_with_a_turn_that_cannot_end_exits_0_past_the_deadline(
    tmp_path: Path, state_dir: Path, workspace: Path
) -> None:
    # process/life.py: a signal starts the clock; a turn that cannot end (its tool's
    # worker thread is stuck for ever: tests/integration/stuck_thread_agent.py) does not hold
    # the process past DEADLINE_S: process.life.forced_exit flushes every journal of every connection,
    # answers the prompt ``cancelled`` and leaves with 0.
    mark = tmp_path / "stuck.mark"
    call = {"id": "c1", "name": "stuck", "arguments": {"how": "held"}}
    script = write_script(tmp_path / "s.jsonl", {"toolCalls": [call]}, {"text": "x"})
    env = {stuck_thread_agent.MARK_ENV: str(mark)}
    listener = start(script, state_dir, env=env, runner=stuck_thread_agent.command)
    try:
        async with peer(listener.ws_url) as client:
            await client.initialize()
            session_id = await client.new_session(workspace)
            prompt = await client.request("session/prompt", prompt_params(session_id, "stuck"))
            while not mark.exists():  # noqa: ASYNC110 (a file)
                await anyio.sleep(0.01)  # the tool's thread is blocked
            listener.process.send_signal(signal.SIGTERM)
            answer = await client.answer_of(prompt)
            code = await anyio.to_thread.run_sync(lambda: stop(listener, signalled=True))
    finally:
        if listener.process.poll() is None:
            stop(listener)
    assert code == 0, listener.log_text()
    assert answer["result"] == {"stopReason": "cancelled"}
    lines = listener.log_text().splitlines()  # JSON log lines, and the "listening on" line
    events = [json.loads(line)["event"] for line in lines if line.startswith("{")]
    assert "shutdown_deadline_passed" in events and "forced_exit" in events
    journal = state_dir / "sessions" / session_id / "journal.jsonl"
    assert check_file(journal, allow_open_tail=True) == []  # what it did is durable and whole
