"""Two hosts, one database (docs/contract.md §13, ``--journal-store postgresql://…``).

Two real ``acp-agent serve --listen`` processes, each with its own state dir, share a real
PostgreSQL (``bench/postgres_server.py``): host A runs a turn and dies (SIGKILL), host B
lists A's session, loads it with everything A acknowledged and prompts on; host A is stopped (SIGSTOP)
while B takes the session over, then continued: A writes nothing more and says it lost the
session. The database's journal passes ``acp-agent journal check`` afterwards.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from bench.postgres_server import PostgresServer
from tests.integration.support import write_script
from tests.remote.support import Listener, WsPeer, peer, prompt_params, start, stop
from tests.support.acp_schema import AcpSchema, JsonObject
from tests.support.process import agent_command

pytestmark = pytest.mark.subprocess

LEASE_S = 2
EXPIRY_TIMEOUT_S = 30.0


def host(tmp_path: Path, name: str, pg_url: str, *lines: JsonObject) -> Listener:
    """One host: its own state dir and script; the store by flag on A, by env on B."""
    state = tmp_path / f"state-{name}"
    script = write_script(tmp_path / f"{name}.jsonl", *lines)
    env = {"ACP_AGENT_JOURNAL_LEASE_SECONDS": str(LEASE_S)}
    if name == "a":
        return start(script, state, "--journal-store", pg_url, env=env)
    return start(script, state, env={**env, "ACP_AGENT_JOURNAL_STORE": pg_url})


def journal_cli(tmp_path: Path, pg_url: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = agent_command("journal", *args, "--state-dir", str(tmp_path / "cli"))
    return subprocess.run(
        [*argv, "--journal-store", pg_url], capture_output=True, text=True, timeout=60, check=False
    )


def stored_events(tmp_path: Path, pg_url: str, session_id: str) -> list[JsonObject]:
    shown = journal_cli(tmp_path, pg_url, "show", session_id, "--json")
    assert shown.returncode == 0, shown.stderr
    return [json.loads(line) for line in shown.stdout.splitlines()[1:]]


def texts(updates: list[JsonObject], kind: str) -> str:
    return "".join(
        u["content"]["text"] for u in updates if u.get("sessionUpdate") == kind and "content" in u
    )


async def load(client: WsPeer, session_id: str, cwd: Path) -> JsonObject:
    params = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
    return await client.call("session/load", params)


def wait_lease_expired(postgres: PostgresServer, pg_url: str, session_id: str) -> None:
    """Until the database says the stopped owner's lease has run out (it cannot renew it)."""
    database = pg_url.split("/")[3].split("?")[0]
    query = f"SELECT lease_until < now() FROM acp_agent_sessions WHERE id = '{session_id}'"
    deadline = time.monotonic() + EXPIRY_TIMEOUT_S
    while postgres.psql(query, database).strip() != "t":
        assert time.monotonic() < deadline, "the stopped owner's lease never ran out"
        time.sleep(0.1)


async def test_host_b_loads_what_a_killed_host_acknowledged_and_prompts_on(
    tmp_path: Path, workspace: Path, pg_url: str, acp_schema: AcpSchema
) -> None:
    a = host(tmp_path, "a", pg_url, {"text": "answer one"}, {"chunks": ["partial"], "hang": True})
    b = host(tmp_path, "b", pg_url, {"text": "answer three"})
    try:
        async with peer(a.ws_url) as client_a:
            await client_a.initialize()
            session_id = await client_a.new_session(workspace)
            answer = await client_a.call("session/prompt", prompt_params(session_id, "one"))
            assert answer["result"] == {"stopReason": "end_turn"}
            acknowledged = client_a.transcript.session_updates(session_id)
            await client_a.request("session/prompt", prompt_params(session_id, "two"))
            while texts(client_a.transcript.session_updates(session_id), "agent_message_chunk") != (
                "answer onepartial"
            ):
                await client_a.receive()  # turn 2 is under way on A
            a.process.kill()  # SIGKILL: no flush, no goodbye
            assert stop(a, signalled=True) == -signal.SIGKILL
        async with peer(b.ws_url) as client_b:
            await client_b.initialize()
            listed = await client_b.call("session/list", {})
            assert [s["sessionId"] for s in listed["result"]["sessions"]] == [session_id]
            assert "result" in await load(client_b, session_id, workspace)
            replayed = client_b.transcript.session_updates(session_id)
            for kind in ("user_message_chunk", "agent_message_chunk"):
                assert texts(replayed, kind).startswith(texts(acknowledged, kind))
            answer = await client_b.call("session/prompt", prompt_params(session_id, "three"))
            assert answer["result"] == {"stopReason": "end_turn"}
            assert "answer three" in texts(
                client_b.transcript.session_updates(session_id), "agent_message_chunk"
            )
            client_b.validate(acp_schema)
    finally:
        assert stop(b) == 0, b.log_text()
        if a.process.returncode is None:
            stop(a)
    events = stored_events(tmp_path, pg_url, session_id)
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["completed", "interrupted", "completed"]
    checked = journal_cli(tmp_path, pg_url, "check", session_id)
    assert checked.returncode == 0 and checked.stdout.strip() == f"{session_id}: ok", checked


async def test_a_stopped_host_loses_the_session_to_b_and_writes_nothing_more(
    tmp_path: Path, workspace: Path, pg_url: str, postgres: PostgresServer, acp_schema: AcpSchema
) -> None:
    a = host(tmp_path, "a", pg_url, {"text": "from a"}, {"text": "never sent"})
    b = host(tmp_path, "b", pg_url, {"text": "from b"})
    try:
        async with peer(a.ws_url) as client_a:
            await client_a.initialize()
            session_id = await client_a.new_session(workspace)
            answer = await client_a.call("session/prompt", prompt_params(session_id, "one"))
            assert answer["result"] == {"stopReason": "end_turn"}
            a.process.send_signal(signal.SIGSTOP)
            try:
                wait_lease_expired(postgres, pg_url, session_id)
                async with peer(b.ws_url) as client_b:
                    await client_b.initialize()
                    assert "result" in await load(client_b, session_id, workspace)
                    prompt = prompt_params(session_id, "two")
                    answer = await client_b.call("session/prompt", prompt)
                    assert answer["result"] == {"stopReason": "end_turn"}
                    client_b.validate(acp_schema)
            finally:
                a.process.send_signal(signal.SIGCONT)
            late = await client_a.call("session/prompt", prompt_params(session_id, "late"))
            assert late["error"]["code"] == -32603
            assert "taken over" in late["error"]["message"]
            assert late["error"]["data"]["reason"] == "taken_over"
            client_a.validate(acp_schema)
    finally:
        codes = stop(a), stop(b)
    assert codes == (0, 0), a.log_text() + b.log_text()
    assert "journal_session_taken_over" in a.log_text()
    events = stored_events(tmp_path, pg_url, session_id)
    prompts = [
        block["text"]
        for e in events
        if e["type"] == "user/message"
        for block in e["data"]["content"]
    ]
    assert prompts == ["one", "two"]  # nothing of A's after the take-over
    ends = [e["data"]["reason"]["kind"] for e in events if e["type"] == "turn/end"]
    assert ends == ["completed", "completed"]
    checked = journal_cli(tmp_path, pg_url, "check", session_id)
    assert checked.returncode == 0, checked
