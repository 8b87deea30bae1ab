"""The real agent process driven by the official Python ACP client (``agent-client-protocol``).

Each test spawns one agent with a script model, runs one scenario through the SDK's
``ClientSideConnection`` and checks three things: what the client saw (in wire order, from the
recorded transcript), the prompt's answer, and the journal left on disk (``check_journal``).
``recorded_agent`` validates every frame the agent wrote against the official ACP v1 schema and
checks the agent exits 0 once its stdin closes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.schema import ReadTextFileResponse

from tests.integration.support import (
    check_journal,
    is_update,
    read_call,
    response_index,
    sent_request_id,
    serve_command,
    tool_text,
    tool_trace,
    update_kinds,
    wait_until,
    write_script,
)
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent

pytestmark = pytest.mark.subprocess


def answer_index(agent: RecordedAgent, text: str) -> int:
    """Where, among the agent's frames, the answer to the prompt ``text`` is."""
    request_id = sent_request_id(agent.transcript, "session/prompt", text)
    return response_index(agent.transcript.agent_frames, request_id)


def turn_updates(
    agent: RecordedAgent, session_id: str, text: str, after: int = -1
) -> list[JsonObject]:
    """The session's updates between frame ``after`` and the answer to the prompt ``text``.

    Fails if an update of the session was written after that answer (unless a later turn's).
    """
    frames = agent.transcript.agent_frames
    answer = answer_index(agent, text)
    return [
        frames[i]["params"]["update"]
        for i in range(after + 1, answer)
        if is_update(frames[i], session_id)
    ]


def assert_nothing_after(agent: RecordedAgent, session_id: str, text: str) -> None:
    frames = agent.transcript.agent_frames
    answer = answer_index(agent, text)
    late = [f for f in frames[answer + 1 :] if is_update(f, session_id)]
    assert not late, f"updates written after the answer to {text!r}: {late}"


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


# --- tool batches -----------------------------------------------------------------------------


def two_reads_then_text(tmp_path: Path, first: str, second: str) -> Path:
    return write_script(
        tmp_path / "script.jsonl",
        {"text": "reading", "toolCalls": [read_call("c1", first), read_call("c2", second)]},
        {"text": "done"},
    )


def assert_batch_lifecycle(updates: list[JsonObject], second_status: str) -> None:
    tools = [u for u in updates if u["sessionUpdate"].startswith("tool_call")]
    assert tool_trace(tools) == [
        ("tool_call", "c1", "pending"),
        ("tool_call", "c2", "pending"),
        ("tool_call_update", "c1", "in_progress"),
        ("tool_call_update", "c1", "completed"),
        ("tool_call_update", "c2", "in_progress"),
        ("tool_call_update", "c2", second_status),
    ]
    assert update_kinds(updates) == [
        "agent_message_chunk",
        *["tool_call"] * 2,
        *["tool_call_update"] * 4,
        "agent_message_chunk",
    ]
    assert [
        u["content"]["text"]
        for u in updates
        if "content" in u and u["sessionUpdate"].startswith("agent")
    ] == ["reading", "done"]


def assert_batch_journal(
    state_dir: Path, sid: str, workspace: Path, second_error: bool
) -> list[JsonObject]:
    journal = check_journal(state_dir, sid, workspace)
    calls, results = journal.of_type("tool/call"), journal.of_type("tool/result")
    assert [(c["callId"], c["name"], c["step"]) for c in calls] == [
        ("c1", "read_file", 1),
        ("c2", "read_file", 1),
    ]
    assert [(r["callId"], r["isError"]) for r in results] == [("c1", False), ("c2", second_error)]
    assert [d["step"] for d in journal.of_type("step/start")] == [1, 2]
    assert journal.end_reasons() == ["completed"]
    return results


async def test_read_file_batch_through_the_client_fs(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    # The files exist only in the client's view: the agent must ask the client for them.
    a, b = workspace / "a.txt", workspace / "sub" / "b.txt"
    client = RecordingClient(files={str(a): "alpha from the editor\n", str(b): "beta buffer"})
    script = two_reads_then_text(tmp_path, "a.txt", "sub/b.txt")
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        response = await agent.prompt_text(sid, "read both")
        assert response.stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "read both")
    assert client.file_reads == [(sid, str(a)), (sid, str(b))]
    assert client.unexpected_calls == []
    assert_batch_lifecycle(updates, "completed")
    done = [u for u in updates if u.get("status") == "completed"]
    assert [tool_text(u) for u in done] == ["alpha from the editor\n", "beta buffer"]
    starts = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert [s.get("rawInput") for s in starts] == [{"path": "a.txt"}, {"path": "sub/b.txt"}]
    assert [s.get("kind") for s in starts] == ["read", "read"]

    results = assert_batch_journal(state_dir, sid, workspace, second_error=False)
    assert results[0]["content"] == [{"type": "text", "text": "alpha from the editor\n"}]


async def test_read_file_batch_from_disk_without_client_fs(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("alpha on disk\n", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("outside the workspace", encoding="utf-8")
    client = RecordingClient(advertise_fs=False)
    script = two_reads_then_text(tmp_path, "a.txt", "../secret.txt")
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        response = await agent.prompt_text(sid, "read both")
        assert response.stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "read both")
    assert client.file_reads == [] and client.unexpected_calls == [], "fs/* was not advertised"
    assert_batch_lifecycle(updates, "failed")
    finals = [u for u in updates if u.get("status") in ("completed", "failed")]
    assert tool_text(finals[0]) == "alpha on disk\n"
    error_text = tool_text(finals[1])
    assert "outside" in error_text and "secret" in error_text, error_text
    assert "outside the workspace" not in error_text, "the file outside cwd was read"

    results = assert_batch_journal(state_dir, sid, workspace, second_error=True)
    assert results[1]["content"][0]["text"] == error_text


async def test_a_client_fs_error_fails_the_tool_call_not_the_turn(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    client = RecordingClient(files={})  # answers every fs/read_text_file with -32002
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [read_call("c1", "gone.txt")]},
        {"text": "the file is gone"},
    )
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "read it")).stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "read it")
    assert client.file_reads == [(sid, str(workspace / "gone.txt"))]
    assert tool_trace(updates) == [
        ("tool_call", "c1", "pending"),
        ("tool_call_update", "c1", "in_progress"),
        ("tool_call_update", "c1", "failed"),
    ]
    failed = tool_text(updates[2])
    assert "gone.txt" in failed, failed
    journal = check_journal(state_dir, sid, workspace)
    (result,) = journal.of_type("tool/result")
    assert result["isError"] is True and result["content"][0]["text"] == failed
    assert journal.end_reasons() == ["completed"]


class StallingClient(RecordingClient):
    """Holds every ``fs/read_text_file`` until ``release`` is set."""

    def __init__(self, files: dict[str, str]) -> None:
        super().__init__(files=files)
        self.asked = asyncio.Event()
        self.release = asyncio.Event()

    async def read_text_file(
        self,
        session_id: str,
        path: str,
        line: int | None = None,
        limit: int | None = None,
        **kwargs: Any,
    ) -> ReadTextFileResponse:
        self.asked.set()
        await self.release.wait()
        return await super().read_text_file(session_id, path, line, limit, **kwargs)


async def test_cancel_while_a_tool_waits_for_the_client(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    client = StallingClient({str(workspace / "a.txt"): "late", str(workspace / "b.txt"): "b"})
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [read_call("c1", "a.txt"), read_call("c2", "b.txt")]},
        {"text": "next turn"},  # a cancelled turn asks the model nothing more
    )
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, "read slowly"))
        await asyncio.wait_for(client.asked.wait(), 10)
        await agent.conn.cancel(session_id=sid)
        assert (await running).stop_reason == "cancelled"
        updates = turn_updates(agent, sid, "read slowly")
        client.release.set()  # the answer now comes too late: the agent drops it
        assert (await agent.prompt_text(sid, "go on")).stop_reason == "end_turn"
        assert_nothing_after(agent, sid, "go on")
    assert tool_trace(updates) == [
        ("tool_call", "c1", "pending"),
        ("tool_call", "c2", "pending"),
        ("tool_call_update", "c1", "in_progress"),
        ("tool_call_update", "c1", "failed"),
        ("tool_call_update", "c2", "failed"),
    ]
    assert agent.client.agent_text(sid) == "next turn"

    journal = check_journal(state_dir, sid, workspace)
    first, second = journal.turns()
    results = [e["data"] for e in first if e["type"] == "tool/result"]
    assert [(r["callId"], r["isError"]) for r in results] == [("c1", True), ("c2", True)]
    assert first[-1]["data"]["reason"]["kind"] == "cancelled"
    assert second[-1]["data"]["reason"]["kind"] == "completed"


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
        await wait_until(lambda: any(agent.transcript.session_updates(sid)), what="first chunk")
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
        await wait_until(lambda: len(agent.transcript.session_updates(sid)) == 2, what="chunks")
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
        await wait_until(lambda: any(agent.transcript.session_updates(sid)), what="first chunk")
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
