"""MCP servers from ``session/new`` end to end: the real agent, the official ACP client, and a
real MCP server (``server.py``) over stdio or streamable HTTP. Every frame is checked against
the ACP schema by the harness."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from acp import PROTOCOL_VERSION, text_block
from acp.schema import Implementation

from tests.integration.support import (
    check_journal,
    serve_command,
    tool_text,
    tool_trace,
    turn_updates,
    write_script,
)
from tests.mcp.support import pids, stdio_server, wait_gone
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess


def call(call_id: str, name: str, /, **arguments: Any) -> JsonObject:
    return {"id": call_id, "name": name, "arguments": arguments}


async def open_session(agent: RecordedAgent, cwd: Path, servers: list[Any]) -> str:
    await agent.conn.initialize(
        protocol_version=PROTOCOL_VERSION,
        client_capabilities=agent.client.capabilities(),
        client_info=Implementation(name="acp-agent-tests", version="0.0.0"),
    )
    response = await agent.conn.new_session(cwd=str(cwd), mcp_servers=servers)
    return response.session_id


def tools_of(updates: list[JsonObject]) -> list[JsonObject]:
    return [u for u in updates if u["sessionUpdate"].startswith("tool_call")]


async def test_a_call_end_to_end_with_permission(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [call("c1", "mcp__test__add", a=2, b=3)]},
        {"text": "five"},
    )
    requests, pid_file = tmp_path / "requests.jsonl", tmp_path / "pids"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    client = RecordingClient(permission="allow_once")
    async with recorded_agent(client, serve_command(script), env=env) as agent:
        sid = await open_session(agent, workspace, [stdio_server(pid_file=pid_file)])
        assert pids(pid_file) == []  # not started by session/new
        response = await agent.conn.prompt(session_id=sid, prompt=[text_block("add")])
        assert response.stop_reason == "end_turn"
        updates = tools_of(turn_updates(agent, sid, "add"))
    assert tool_trace(updates) == [
        ("tool_call", "c1", "pending"),
        ("tool_call_update", "c1", "in_progress"),
        ("tool_call_update", "c1", "completed"),
    ]
    assert updates[0]["title"] == "test: add" and updates[0]["kind"] == "other"
    assert updates[0]["rawInput"] == {"a": 2, "b": 3}
    assert tool_text(updates[-1]) == "5"
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == "c1" and asked.tool_call.title == "test: add"
    logged = read_requests(requests)
    assert "mcp__test__echo" in logged[0]["tools"] and "read_file" in logged[0]["tools"]
    journal = check_journal(state_dir, sid, workspace)
    (result,) = journal.of_type("tool/result")
    assert result["content"] == [{"type": "text", "text": "5"}] and result["isError"] is False
    (pid,) = pids(pid_file)
    assert wait_gone(pid), "the stdio MCP server outlived the agent"


async def test_reject_then_allow_always_is_remembered_per_tool(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [call("r1", "mcp__test__add", a=1, b=1)]},
        {"text": "refused"},
        {"toolCalls": [call("a1", "mcp__test__add", a=2, b=2)]},
        {"text": "allowed"},
        {
            "toolCalls": [
                call("a2", "mcp__test__add", a=3, b=3),
                call("e1", "mcp__test__echo", text="x"),
            ]
        },
        {"text": "remembered"},
    )
    client = RecordingClient(permission="reject_once")
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await open_session(agent, workspace, [stdio_server()])
        for text, answer in (("one", "reject_once"), ("two", "allow_always"), ("three", "")):
            client.permission = answer
            assert (
                await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
            ).stop_reason == "end_turn"
        rejected = tools_of(turn_updates(agent, sid, "one"))
        third = tools_of(turn_updates(agent, sid, "three"))
    assert rejected[-1]["status"] == "failed"
    assert "permission denied: the user rejected it" in tool_text(rejected[-1])
    # add was allowed always in turn two; echo is another tool, asked again (and cancelled:
    # the client has no answer for it, so the call is cancelled, not run).
    assert [
        (r.tool_call.tool_call_id, r.answer.outcome.outcome) for r in client.permission_requests
    ] == [
        ("r1", "selected"),
        ("a1", "selected"),
        ("e1", "cancelled"),
    ]
    always = client.permission_requests[1].options[1]
    assert always.kind == "allow_always" and "add (MCP server test)" in always.name
    assert [
        (u["toolCallId"], u["status"])
        for u in third
        if u.get("status") in ("completed", "failed") and u["toolCallId"] in ("a2", "e1")
    ] == [
        ("a2", "completed"),
        ("e1", "failed"),
    ]
    results = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert [r["isError"] for r in results] == [True, False, False, True]


async def test_modes_read_only_auto_edit_full_access(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    both = {
        "toolCalls": [
            call("e", "mcp__test__echo", text="hi"),
            call("a", "mcp__test__add", a=1, b=2),
        ]
    }
    script = write_script(
        tmp_path / "script.jsonl", both, {"text": "ok"}, both, {"text": "ok"}, both, {"text": "ok"}
    )
    client = RecordingClient(permission="reject_once")
    statuses: dict[str, list[tuple[str, str]]] = {}
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await open_session(agent, workspace, [stdio_server()])
        for mode in ("read-only", "auto-edit", "full-access"):
            await agent.conn.set_session_mode(session_id=sid, mode_id=mode)
            await agent.conn.prompt(session_id=sid, prompt=[text_block(mode)])
            updates = tools_of(turn_updates(agent, sid, mode))
            updates = updates[-6:]  # this turn's: 2 starts, 2 in_progress, 2 ends
            statuses[mode] = [
                (u["toolCallId"], u["status"])
                for u in updates
                if u.get("status") in ("completed", "failed")
            ]
            if mode == "read-only":
                refused = next(
                    u for u in updates if u["toolCallId"] == "a" and u.get("status") == "failed"
                )
                assert "read-only mode" in tool_text(refused)
                kinds = {
                    u["toolCallId"]: u["kind"] for u in updates if u["sessionUpdate"] == "tool_call"
                }
                assert kinds == {"e": "read", "a": "other"}
    # The script reuses the model's ids e and a in every turn; ACP ids stay unique per session
    # (journal/callids.py): the second and third turns' calls carry the turn and step.
    assert statuses == {
        "read-only": [("e", "completed"), ("a", "failed")],
        "auto-edit": [("e#t2s1", "completed"), ("a#t2s1", "failed")],  # asked, and rejected
        "full-access": [("e#t3s1", "completed"), ("a#t3s1", "completed")],
    }
    assert [r.tool_call.tool_call_id for r in client.permission_requests] == ["a#t2s1"]


async def test_failing_tool_and_image_result(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {
            "toolCalls": [
                call("f", "mcp__test__fail", reason="boom"),
                call("p", "mcp__test__picture"),
            ]
        },
        {"text": "done"},
    )
    client = RecordingClient(permission="allow_once")
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await open_session(agent, workspace, [stdio_server()])
        await agent.conn.set_session_mode(session_id=sid, mode_id="full-access")
        assert (
            await agent.conn.prompt(session_id=sid, prompt=[text_block("go")])
        ).stop_reason == "end_turn"
        updates = tools_of(turn_updates(agent, sid, "go"))
    ends = {u["toolCallId"]: u for u in updates if u.get("status") in ("completed", "failed")}
    assert ends["f"]["status"] == "failed" and "fail" in tool_text(ends["f"])
    assert ends["p"]["status"] == "completed"
    assert ends["p"]["content"] == [
        {
            "type": "content",
            "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        }
    ]
    results = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert [r["isError"] for r in results] == [True, False]


async def test_cancel_during_a_slow_tool_keeps_the_connection(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    marker, pid_file = tmp_path / "slow-started", tmp_path / "pids"
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [call("s", "mcp__test__slow", seconds=30)]},
        {"toolCalls": [call("e", "mcp__test__echo", text="still here")]},
        {"text": "done"},
    )
    server = stdio_server(pid_file=pid_file, MCP_TEST_SLOW_FILE=str(marker))
    async with recorded_agent(RecordingClient(), serve_command(script), env=agent_env) as agent:
        sid = await open_session(agent, workspace, [server])
        await agent.conn.set_session_mode(session_id=sid, mode_id="full-access")
        running = asyncio.create_task(
            agent.conn.prompt(session_id=sid, prompt=[text_block("slow")])
        )
        await wait_for_file(marker)
        started = time.monotonic()
        await agent.conn.cancel(session_id=sid)
        assert (await asyncio.wait_for(running, 5)).stop_reason == "cancelled"
        assert time.monotonic() - started < 3
        assert (
            await agent.conn.prompt(session_id=sid, prompt=[text_block("again")])
        ).stop_reason == "end_turn"
        again = tools_of(turn_updates(agent, sid, "again"))
    assert tool_text(again[-1]) == "echo: still here"
    assert len(pids(pid_file)) == 1  # the same server answered after the cancel
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["cancelled", "completed"]
    first = journal.of_type("tool/result")[0]
    assert first["isError"] is True and "cancelled" in first["content"][0]["text"]


async def wait_for_file(path: Path, within: float = 20.0) -> None:
    deadline = time.monotonic() + within
    while not await anyio.Path(path).exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.02)
