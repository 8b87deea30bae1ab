"""Tool-call batches through the official Python ACP client, against the real agent.

``read_file`` reads through the client (``fs/read_text_file``) when it advertises
``fs.readTextFile``, else from disk under the session cwd; calls of one batch run in order, each
going ``pending`` -> ``in_progress`` -> ``completed`` / ``failed``, results journaled in order.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from acp.schema import (
    ReadTextFileResponse,
)

from tests.integration.support import (
    assert_nothing_after,
    check_journal,
    read_call,
    serve_command,
    tool_text,
    tool_trace,
    turn_updates,
    update_kinds,
    write_script,
)
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordingClient, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess


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
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    async with recorded_agent(client, serve_command(script), env=env) as agent:
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

    # docs/contract.md §5: each model request is logged; the second one carries both results.
    logged = read_requests(requests)
    assert [(r["sessionId"], r["turn"], r["step"]) for r in logged] == [(sid, 1, 1), (sid, 1, 2)]
    assert all("read_file" in r["tools"] for r in logged)
    assert [m["role"] for m in logged[1]["messages"]] == ["user", "assistant", "tool", "tool"]
    assert logged[1]["messages"][0]["content"] == [{"type": "text", "text": "read both"}]
    tool_messages = logged[1]["messages"][2:]
    assert [m["content"] for m in tool_messages] == [r["content"] for r in results]


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


async def test_tool_failures_are_failed_results_and_the_turn_goes_on(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (tmp_path / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    (workspace / "escape").symlink_to(tmp_path, target_is_directory=True)
    calls = [
        read_call("link", "escape/secret.txt"),  # a symlink out of the workspace
        read_call("abs", str(tmp_path / "secret.txt")),  # an absolute path outside
        read_call("missing", "no-such-file.txt"),
        {"id": "unknown", "name": "no_such_tool", "arguments": {}},
        {"id": "badargs", "name": "read_file", "arguments": {"path": 5}},
    ]
    script = write_script(tmp_path / "script.jsonl", {"toolCalls": calls}, {"text": "ok"})
    client = RecordingClient(advertise_fs=False)
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "try everything")).stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "try everything")
    finals = {u["toolCallId"]: u for u in updates if u.get("status") in ("completed", "failed")}
    assert list(finals) == [c["id"] for c in calls]
    assert {i: u["status"] for i, u in finals.items()} == {c["id"]: "failed" for c in calls}
    texts = {i: tool_text(u) for i, u in finals.items()}
    assert all(texts.values()), texts
    assert not any("TOP SECRET" in text for text in texts.values()), texts
    assert "no_such_tool" in texts["unknown"], texts
    assert agent.client.agent_text(sid) == "ok"
    journal = check_journal(state_dir, sid, workspace)
    assert [r["isError"] for r in journal.of_type("tool/result")] == [True] * len(calls)
