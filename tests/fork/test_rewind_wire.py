"""``_acp_agent/rewind {sessionId, toTurn}`` over the wire (docs/contract.md §9, §4).

The real agent process, raw pipes; frames validated after the run against the official
*unstable* schema (the rewound session is resumed with ``session/resume``). The child must hold
exactly the parent's journal up to the boundary just before turn ``toTurn``'s ``turn/start``,
out-of-turn messages before it included, and be promptable, loadable and resumable.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_agent.journal.invariant import check_file
from tests.integration.support import check_journal, read_jsonl, serve_command, write_script
from tests.support.acp_schema import AcpSchema, schema_path
from tests.support.recording import RawAgent, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

INIT = {"protocolVersion": 1, "clientCapabilities": {}}


@pytest.fixture(scope="module")
def unstable_schema() -> AcpSchema:
    return AcpSchema.load(schema_path().with_name("schema.unstable.json"))


def prompt(sid: str, text: str) -> dict[str, Any]:
    return {"sessionId": sid, "prompt": [{"type": "text", "text": text}]}


def user_texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("".join(b.get("text", "") for b in m["content"]), m["source"]["kind"])
        for m in request["messages"]
        if m["role"] == "user"
    ]


async def test_rewind_forks_before_the_turn_keeping_what_was_injected_before_it(
    tmp_path: Path,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
    unstable_schema: AcpSchema,
) -> None:
    log = tmp_path / "requests.jsonl"
    answers = [{"text": t} for t in ("one", "two", "three", "two again", "after load")]
    script = write_script(tmp_path / "s.jsonl", *answers)
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    new = {"cwd": str(workspace), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": "p"}}}
    async with RawAgent(serve_command(script), env=env, validate=False) as agent:
        init = await agent.request("initialize", INIT)
        await agent.request("session/new", new)
        await agent.request("session/prompt", prompt("p", "first"))
        ctx = {"sessionId": "p", "content": "between", "source": {"kind": "client"}}
        await agent.request("_acp_agent/inject", ctx)
        await agent.request("session/prompt", prompt("p", "second"))
        await agent.request("session/prompt", prompt("p", "third"))
        rewound = await agent.request("_acp_agent/rewind", {"sessionId": "p", "toTurn": 2})
        child = rewound["result"]["sessionId"]
        resent = await agent.request("session/prompt", prompt(child, "second, edited"))
        bad = [
            await agent.request("_acp_agent/rewind", {"sessionId": "p", "toTurn": turn})
            for turn in (0, 4)
        ]
        wrong_type = await agent.request("_acp_agent/rewind", {"sessionId": "p", "toTurn": "2"})
        unknown = await agent.request("_acp_agent/rewind", {"sessionId": "nope", "toTurn": 1})
    agent.transcript.validate(unstable_schema)
    assert "rewind" not in init["result"]["agentCapabilities"]["_meta"]["acp_agent"]  # pinned
    assert rewound["result"] == {"sessionId": child} and child != "p"
    assert resent["result"]["stopReason"] == "end_turn"

    # the child: the parent's events up to just before turn 2's turn/start, the injected
    # context included (it was out of turn, before that turn/start)
    parent = check_journal(state_dir, "p", workspace).events
    turn2 = next(e for e in parent if e["type"] == "turn/start" and e["data"] == {"turn": 2})
    kept = turn2["seq"] - 1
    assert parent[kept - 1]["type"] == "user/message"
    assert parent[kept - 1]["data"]["source"] == {"kind": "client"}
    # (copied events keep their times, older than the child's createdAt: not check_journal)
    assert check_file(state_dir / "sessions" / child) == []
    header, *events = read_jsonl(state_dir / "sessions" / child / "journal.jsonl")
    assert events[:kept] == parent[:kept]
    assert header["parent"] == {"sessionId": "p", "seq": kept}
    assert events[kept] == {**events[kept], "type": "turn/start", "data": {"turn": 2}}
    # what the model saw in the child: turn 1 and the context, then the edited prompt only
    last = read_requests(log)[-1]
    assert (last["sessionId"], last["turn"]) == (child, 2)
    assert user_texts(last) == [
        ("first", "user"),
        ("between", "client"),
        ("second, edited", "user"),
    ]
    # bad toTurn: -32602 naming it; an unknown session: -32002
    for answer, turn in zip(bad, (0, 4), strict=True):
        assert answer["error"]["code"] == -32602
        assert answer["error"]["data"] == {"path": "$.toTurn", "sessionId": "p", "toTurn": turn}
        assert "the session has turns 1 to 3" in answer["error"]["message"]
    assert wrong_type["error"]["code"] == -32602
    assert unknown["error"]["code"] == -32002

    # a fresh process: the child loads (replaying its history) and resumes like any session
    async with RawAgent(serve_command(script), env=env, validate=False) as again:
        await again.request("initialize", INIT)
        load = {"sessionId": child, "cwd": str(workspace), "mcpServers": []}
        loaded = await again.request("session/load", load)
        replayed = [
            f["params"]["update"]["content"].get("text")
            for f in again.skipped
            if f.get("method") == "session/update"
            and f["params"]["update"]["sessionUpdate"] == "user_message_chunk"
        ]
        answer = await again.request("session/prompt", prompt(child, "and then?"))
    again.transcript.validate(unstable_schema)
    assert "error" not in loaded
    assert replayed == ["first", "between", "second, edited"]
    assert answer["result"]["stopReason"] == "end_turn"
    async with RawAgent(serve_command(script), env=env, validate=False) as third:
        await third.request("initialize", INIT)
        resumed = await third.request(
            "session/resume", {"sessionId": child, "cwd": str(workspace), "mcpServers": []}
        )
    third.transcript.validate(unstable_schema)
    assert "result" in resumed


async def test_edit_and_resend_with_the_python_sdk(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str], unstable_schema: AcpSchema
) -> None:
    """docs/clients.md "Edit and resend": rewind through the SDK's ``ext_method``, then prompt
    the child like any session (the SDK parses every update of it)."""
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", *({"text": t} for t in ("a", "b", "b2")))
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with recorded_agent(
        command=serve_command(script), env=env, use_unstable_protocol=True, validate=False
    ) as agent:
        parent = await agent.handshake(workspace)
        await agent.prompt_text(parent, "question one")
        await agent.prompt_text(parent, "question two")
        rewound = await agent.conn.ext_method(
            "acp_agent/rewind", {"sessionId": parent, "toTurn": 2}
        )
        child = rewound["sessionId"]
        answer = await agent.prompt_text(child, "question two, better put")
    agent.transcript.validate(unstable_schema)
    assert answer.stop_reason == "end_turn"
    assert agent.client.agent_text(child) == "b2"
    last = read_requests(log)[-1]
    assert user_texts(last) == [("question one", "user"), ("question two, better put", "user")]
    commands = [
        u
        for u in agent.transcript.session_updates(child)
        if u["sessionUpdate"] == "available_commands_update"
    ]
    assert len(commands) == 1  # the child is announced like a fork
