"""The real agent process driven by the official Python ACP client (``agent-client-protocol``).

Each test spawns one agent with a script model, runs one scenario through the SDK's
``ClientSideConnection`` and checks three things: what the client saw (in wire order, from the
recorded transcript), the prompt's answer, and the journal left on disk (``check_journal``).
``recorded_agent`` validates every frame the agent wrote against the official ACP v1 schema and
checks the agent exits 0 once its stdin closes. Tool calls: ``test_sdk_tools.py``.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from acp import RequestError
from acp.schema import (
    EmbeddedResourceContentBlock,
    ResourceContentBlock,
    TextContentBlock,
    TextResourceContents,
)

from tests.integration.support import (
    answer_index,
    assert_nothing_after,
    check_journal,
    serve_command,
    turn_updates,
    turn_updates_so_far,
    update_kinds,
    wait_until,
    write_script,
)
from tests.support.acp_schema import JsonObject
from tests.support.recording import recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess


# --- text and thoughts ------------------------------------------------------------------------


async def test_streamed_text_turn(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    chunks = ["Hel", "lo, ", "wor", "ld"]
    script = write_script(tmp_path / "script.jsonl", {"chunks": chunks})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        response = await agent.prompt_text(sid, "say hello")
        assert response.stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "say hello")
        assert_nothing_after(agent, sid, "say hello")
    assert update_kinds(updates) == ["agent_message_chunk"] * 4
    assert [u["content"]["text"] for u in updates] == chunks
    message_ids = {u.get("messageId") for u in updates}
    assert len(message_ids) == 1 and None not in message_ids, message_ids
    assert agent.client.agent_text(sid) == "Hello, world"

    journal = check_journal(state_dir, sid, workspace)
    assert journal.types() == [
        "turn/start",
        "user/message",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]
    (user,) = journal.of_type("user/message")
    assert user["content"] == [{"type": "text", "text": "say hello"}]
    assert user["source"]["kind"] == "user"
    (assistant,) = journal.of_type("assistant/message")
    assert assistant["content"] == [{"type": "text", "text": "Hello, world"}]
    assert assistant["id"] == message_ids.pop(), "live messageId differs from the journal's id"
    assert journal.end_reasons() == ["completed"]


async def test_awkward_text_round_trips_unchanged(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """Newlines, NUL, U+2028 and astral characters: escaped on the wire, one frame per line."""
    chunks = ["line 1\nline 2\r\n", "nul \x00 tab \t", "sep \u2028 \u2029", "astral \U0001f600"]
    script = write_script(tmp_path / "script.jsonl", {"chunks": chunks})
    prompt_text = 'quote " backslash \\ newline \n emoji \U0001f680'
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, prompt_text)).stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "emoji")
    assert [u["content"]["text"] for u in updates] == chunks
    assert agent.client.agent_text(sid) == "".join(chunks)
    journal = check_journal(state_dir, sid, workspace)
    (user,) = journal.of_type("user/message")
    assert user["content"] == [{"type": "text", "text": prompt_text}]
    (assistant,) = journal.of_type("assistant/message")
    assert assistant["content"] == [{"type": "text", "text": "".join(chunks)}]


async def test_thought_streams_as_agent_thought_chunk(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"thought": "pondering", "text": "42"})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        response = await agent.prompt_text(sid, "the answer?")
        assert response.stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "the answer?")
    assert update_kinds(updates) == ["agent_thought_chunk", "agent_message_chunk"]
    assert [u["content"] for u in updates] == [
        {"type": "text", "text": "pondering"},
        {"type": "text", "text": "42"},
    ]
    assert updates[0]["messageId"] == updates[1]["messageId"]

    journal = check_journal(state_dir, sid, workspace)
    (assistant,) = journal.of_type("assistant/message")
    assert assistant["content"] == [
        {"type": "thought", "text": "pondering"},
        {"type": "text", "text": "42"},
    ]


async def test_prompt_with_resource_link_and_embedded_context(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """``embeddedContext`` is advertised, so it must work; ``resource_link`` is baseline."""
    script = write_script(tmp_path / "script.jsonl", {"text": "seen"})
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    blocks: list[JsonObject] = [
        {"type": "text", "text": "look at these"},
        {"type": "resource_link", "uri": f"file://{workspace}/x.py", "name": "x.py"},
        {
            "type": "resource",
            "resource": {"uri": f"file://{workspace}/y.py", "text": "print(1)\n"},
        },
    ]
    async with recorded_agent(command=serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        init = agent.transcript.agent_frames[0]["result"]
        assert init["agentCapabilities"]["promptCapabilities"].get("embeddedContext") is True
        response = await agent.conn.prompt(
            session_id=sid,
            prompt=[
                TextContentBlock(type="text", text="look at these"),
                ResourceContentBlock(type="resource_link", uri=blocks[1]["uri"], name="x.py"),
                EmbeddedResourceContentBlock(
                    type="resource",
                    resource=TextResourceContents(
                        uri=blocks[2]["resource"]["uri"], text="print(1)\n"
                    ),
                ),
            ],
        )
        assert response.stop_reason == "end_turn"
    journal = check_journal(state_dir, sid, workspace)
    (user,) = journal.of_type("user/message")
    assert user["content"] == blocks
    (logged,) = read_requests(requests)
    assert logged["messages"][0]["content"] == blocks


# --- queueing and cancelling ------------------------------------------------------------------


async def test_queued_prompt_is_answered_when_its_own_turn_ends(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"chunks": ["first-a", "first-b", "first-c"], "delayMs": 150},
        {"text": "second"},
    )
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        first = asyncio.create_task(agent.prompt_text(sid, "prompt one"))
        await wait_until(lambda: any(turn_updates_so_far(agent, sid)), what="first chunk")
        second = asyncio.create_task(agent.prompt_text(sid, "prompt two"))
        await wait_until(
            lambda: (
                len(
                    [
                        m
                        for m in agent.transcript.client_messages
                        if m.get("method") == "session/prompt"
                    ]
                )
                == 2
            ),
            what="the second prompt to be sent",
        )
        assert not first.done(), "the first turn ended before the second prompt was sent"
        assert (await first).stop_reason == "end_turn"
        assert (await second).stop_reason == "end_turn"
        one = answer_index(agent, "prompt one")
        two = answer_index(agent, "prompt two")
        assert one < two, "answers out of order"
        updates_one = turn_updates(agent, sid, "prompt one")
        updates_two = turn_updates(agent, sid, "prompt two", after=one)
        assert_nothing_after(agent, sid, "prompt two")
    assert [u["content"]["text"] for u in updates_one] == ["first-a", "first-b", "first-c"]
    assert [u["content"]["text"] for u in updates_two] == ["second"]

    journal = check_journal(state_dir, sid, workspace)
    turns = journal.turns()
    assert len(turns) == 2
    assert [t[0]["data"]["turn"] for t in turns] == [1, 2]
    prompts = [
        [e["data"]["content"][0]["text"] for e in t if e["type"] == "user/message"] for t in turns
    ]
    assert prompts == [["prompt one"], ["prompt two"]]
    assert journal.end_reasons() == ["completed", "completed"]


async def test_cancel_during_a_hanging_model(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"chunks": ["partial ", "answer"], "hang": True},
        {"text": "after the cancel"},
    )
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, "hang on"))
        await wait_until(lambda: len(turn_updates_so_far(agent, sid)) == 2, what="chunks")
        await asyncio.sleep(0.1)
        assert not running.done(), "a hanging model ended its turn"
        await agent.conn.cancel(session_id=sid)
        assert (await running).stop_reason == "cancelled"
        updates = turn_updates(agent, sid, "hang on")
        # The session goes on after a cancel.
        assert (await agent.prompt_text(sid, "again")).stop_reason == "end_turn"
        one = answer_index(agent, "hang on")
        later = turn_updates(agent, sid, "again", after=one)
    assert [u["content"]["text"] for u in updates] == ["partial ", "answer"]
    assert [u["content"]["text"] for u in later] == ["after the cancel"]

    journal = check_journal(state_dir, sid, workspace)
    first, second = journal.turns()
    assert first[-1]["data"]["reason"]["kind"] == "cancelled"
    assert second[-1]["data"]["reason"]["kind"] == "completed"
    assert "step/start" in [e["type"] for e in first]


async def test_cancel_answers_the_queued_prompt_cancelled_too(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"chunks": ["waiting"], "hang": True})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, "running prompt"))
        await wait_until(lambda: any(turn_updates_so_far(agent, sid)), what="first chunk")
        queued = asyncio.create_task(agent.prompt_text(sid, "queued prompt"))
        await wait_until(
            lambda: (
                len(
                    [
                        m
                        for m in agent.transcript.client_messages
                        if m.get("method") == "session/prompt"
                    ]
                )
                == 2
            ),
            what="the queued prompt to be sent",
        )
        await agent.conn.cancel(session_id=sid)
        assert (await running).stop_reason == "cancelled"
        assert (await queued).stop_reason == "cancelled"
        assert_nothing_after(agent, sid, "running prompt")

    journal = check_journal(state_dir, sid, workspace)
    assert len(journal.turns()) == 1, "the queued prompt opened a turn"
    assert journal.end_reasons() == ["cancelled"]
    texts = [d["content"][0]["text"] for d in journal.of_type("user/message")]
    assert texts == ["running prompt"]


# --- ends other than end_turn -----------------------------------------------------------------


async def test_model_error_is_a_json_rpc_error_and_journaled(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"chunks": ["so far"], "error": {"message": "provider exploded"}},
        {"text": "recovered"},
    )
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        with pytest.raises(RequestError) as failure:
            await agent.prompt_text(sid, "fail please")
        assert failure.value.code == -32603
        assert "provider exploded" in str(failure.value)
        assert_nothing_after(agent, sid, "fail please")
        assert (await agent.prompt_text(sid, "try again")).stop_reason == "end_turn"

    journal = check_journal(state_dir, sid, workspace)
    first, second = journal.turns()
    types = [e["type"] for e in first]
    assert "agent/error" in types
    assert types.index("agent/error") < types.index("turn/end")
    (error,) = journal.of_type("agent/error")
    assert error["turn"] == 1 and error.get("step") == 1
    assert "provider exploded" in error["error"]["message"]
    assert first[-1]["data"]["reason"]["kind"] == "error"
    assert second[-1]["data"]["reason"]["kind"] == "completed"


async def test_max_tokens_stop_reason(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl", {"text": "cut off mid", "stopReason": "max_tokens"}
    )
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        response = await agent.prompt_text(sid, "write a novel")
        assert response.stop_reason == "max_tokens"
    assert agent.client.agent_text(sid) == "cut off mid"
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["max_tokens"]


async def test_script_exhaustion_is_a_clear_error(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"text": "the only answer"})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "one")).stop_reason == "end_turn"
        with pytest.raises(RequestError) as failure:
            await agent.prompt_text(sid, "two")
    assert failure.value.code == -32603
    message = str(failure.value).lower()
    assert "script" in message and "exhausted" in message, message

    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed", "error"]
    (error,) = journal.of_type("agent/error")
    assert error["turn"] == 2 and "exhausted" in error["error"]["message"]
