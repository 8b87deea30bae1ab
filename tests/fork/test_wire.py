"""``session/fork`` (unstable ACP) over the wire, against the real agent process.

Frames are validated against the official *unstable* schema (the stable one has no
``session/fork``), which the harness validates after the run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.journal.invariant import check_file
from tests.fork.support import journal_entries
from tests.integration.support import initialize, new_session, prompt, serve_command, write_script
from tests.support.acp_schema import AcpSchema, schema_path
from tests.support.recording import RawAgent, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess


@pytest.fixture(scope="module")
def unstable_schema() -> AcpSchema:
    return AcpSchema.load(schema_path().with_name("schema.unstable.json"))


@pytest.fixture
def cwd(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir()
    return path.resolve()


def logged_requests(path: Path) -> list[dict[str, Any]]:
    return read_requests(path)


def user_texts(request: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (m["role"], "".join(b.get("text", "") for b in m["content"]), m["source"]["kind"])
        for m in request["messages"]
        if m["role"] == "user"
    ]


async def test_a_client_forks_after_an_idle_inject_and_prompts_the_child_at_once(
    tmp_path: Path, cwd: Path, agent_env: dict[str, str], unstable_schema: AcpSchema
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "hello"}, {"text": "forked answer"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    state = Path(agent_env["ACP_AGENT_STATE_DIR"])
    async with recorded_agent(
        command=serve_command(script), env=env, use_unstable_protocol=True, validate=False
    ) as agent:
        parent = await agent.handshake(cwd)
        await agent.prompt_text(parent, "Hi")
        await agent.conn.ext_method("acp_agent/inject", {"sessionId": parent, "content": "ctx"})
        forked = await agent.conn.fork_session(session_id=parent, cwd=str(cwd), mcp_servers=[])
        answer = await agent.prompt_text(forked.session_id, "and now?")
    agent.transcript.validate(unstable_schema)
    init = next(f for f in agent.transcript.responses() if "agentCapabilities" in f["result"])
    assert init["result"]["agentCapabilities"]["sessionCapabilities"]["fork"] == {}
    fork_frame = agent.transcript.responses()[-2]
    assert fork_frame["result"]["sessionId"] == forked.session_id
    assert fork_frame["result"]["_meta"] == {
        "acp_agent": {"parent": {"sessionId": parent, "seq": 7}}
    }
    assert fork_frame["result"]["modes"]["currentModeId"] == "ask"  # answered like session/new
    assert answer.stop_reason == "end_turn"
    child_request = logged_requests(log)[-1]
    assert (child_request["sessionId"], child_request["turn"]) == (forked.session_id, 2)
    assert user_texts(child_request) == [
        ("user", "Hi", "user"),
        ("user", "ctx", "client"),
        ("user", "and now?", "user"),
    ]
    assert journal_entries(state, forked.session_id)[:7] == journal_entries(state, parent)
    assert check_file(state / "sessions" / forked.session_id) == []


async def test_fork_errors_and_a_chosen_id_and_seq(
    tmp_path: Path, cwd: Path, agent_env: dict[str, str], unstable_schema: AcpSchema
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "hello"})
    state = Path(agent_env["ACP_AGENT_STATE_DIR"])

    def fork(session_id: str, **meta: Any) -> dict[str, Any]:
        params: dict[str, Any] = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
        return {**params, "_meta": {"acp_agent": meta}} if meta else params

    async with RawAgent(serve_command(script), env=agent_env, validate=False) as agent:
        for frame in (initialize(), new_session(0, cwd, "p"), prompt(0, "p", "Hi")):
            assert "result" in await agent.request(frame["method"], frame["params"])
        inside = await agent.request("session/fork", fork("p", seq=3))
        unknown = await agent.request("session/fork", fork("nope"))
        relative = await agent.request("session/fork", {"sessionId": "p", "cwd": "rel"})
        chosen = await agent.request("session/fork", fork("p", seq=0, sessionId="kid"))
        taken = await agent.request("session/fork", fork("p", sessionId="kid"))
        await agent.close_stdin()
    agent.transcript.validate(unstable_schema)
    assert inside["error"]["code"] == -32602
    assert inside["error"]["message"] == (
        "cannot fork session 'p' at seq 3: "
        "seq 3 is inside turn 1 (turn/start at seq 1, turn/end at seq 6)"
    )
    assert inside["error"]["data"] == {"sessionId": "p", "seq": 3}
    assert unknown["error"]["code"] == -32002
    assert relative["error"]["code"] == -32602
    assert chosen["result"]["sessionId"] == "kid"
    assert chosen["result"]["_meta"] == {"acp_agent": {"parent": {"sessionId": "p", "seq": 0}}}
    assert taken["error"]["code"] == -32602
    assert "already in use" in taken["error"]["message"]
    assert sorted(p.name for p in (state / "sessions").iterdir()) == ["kid", "p"]
    assert journal_entries(state, "kid") == []
