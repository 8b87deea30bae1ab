"""Issue 15's tools and plan mode over the real wire: the official Python SDK client
(``RecordingClient``) drives the real agent running the script model; every frame is validated
against the ACP schema when each ``recorded_agent`` block ends.

Expectations: docs/contract.md §9 (plan mode, more tools, live command output) and
docs/tools.md. Orders are forced by the client (a command waits for a file the test creates
once it saw the first output), never by time."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    serve_command,
    tool_text,
    turn_updates,
    wait_until,
)
from tests.sandbox.support import DEFAULT_LINE
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordingClient, recorded_agent
from tests.support.requests import read_requests
from tests.tools.loopback_http import loopback_server
from tests.tools.support import call, finals, script

pytestmark = pytest.mark.subprocess


def content_texts(update: JsonObject) -> list[str]:
    return [
        item["content"]["text"]
        for item in update.get("content") or []
        if item.get("type") == "content" and item["content"].get("type") == "text"
    ]


GATED = "echo first; while [ ! -e go ]; do sleep 0.02; done; echo second"


async def test_local_command_output_reaches_the_card_before_the_result(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    client = RecordingClient(advertise_fs=False)  # no terminal capability: runs locally
    path = script(tmp_path, call("c1", "run_command", command=GATED))
    async with recorded_agent(client, serve_command(path), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        prompt = asyncio.create_task(agent.prompt_text(sid, "run"))

        def live() -> list[JsonObject]:
            return [
                u
                for u in agent.transcript.session_updates(sid)
                if u["sessionUpdate"] == "tool_call_update"
                and "status" not in u
                and u.get("content")
            ]

        await wait_until(lambda: bool(live()), "a live output update")
        assert not prompt.done(), "the command still waits for `go`"
        (workspace / "go").touch()
        assert (await prompt).stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "run")
    shown = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and u.get("content")]
    first, final = shown[0], shown[-1]
    assert "status" not in first and content_texts(first) == [f"$ {GATED}\nfirst"]
    assert final["status"] == "completed" and final is finals(updates)[0], "the result comes last"
    assert tool_text(final) == f"{DEFAULT_LINE}$ {GATED}\nfirst\nsecond\n[exit code 0]"
    assert all(u["toolCallId"] == "c1" for u in shown)
    (result,) = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert result["content"][0]["text"] == tool_text(final), "only the result is journaled"


async def test_plan_mode_refuses_edits_and_an_approved_plan_switches_the_mode(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    client = RecordingClient(advertise_fs=False, permission="auto-edit")
    todos = [{"content": "change a.txt", "status": "pending"}]
    path = script(
        tmp_path,
        call("c1", "write_file", path="a.txt", content="too early"),
        call("c2", "todo_write", todos=todos),
        call("c3", "exit_plan_mode", plan="1. write a.txt"),
        call("c4", "write_file", path="a.txt", content="planned"),
    )
    async with recorded_agent(client, serve_command(path), env=env) as agent:
        sid = await agent.handshake(workspace)
        await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
        assert (await agent.prompt_text(sid, "plan it")).stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "plan it")
        everything = agent.transcript.session_updates(sid)
    kinds = [u["sessionUpdate"] for u in everything]
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "planned"
    refused, planned, approved, written = finals(updates)
    assert refused["status"] == "failed"
    assert "plan mode: file edits are not allowed" in tool_text(refused)
    assert planned["status"] == "completed" and "plan" in kinds
    assert approved["status"] == "completed" and "now in auto-edit mode" in tool_text(approved)
    assert written["status"] == "completed", "auto-edit writes without asking"
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == "c3" and asked.tool_call.kind == "switch_mode"
    assert [(o.option_id, o.kind) for o in asked.options] == [
        ("auto-edit", "allow_always"),
        ("ask", "allow_once"),
        ("keep-planning", "reject_once"),
    ]
    shown = asked.tool_call.model_dump(by_alias=True, exclude_none=True)["content"]
    assert shown == [{"type": "content", "content": {"type": "text", "text": "1. write a.txt"}}]
    # the switch is announced as set_mode's is, before the tool's result, and persisted
    modes = [(i, u["currentModeId"]) for i, u in enumerate(everything) if "currentModeId" in u]
    assert [mode for _, mode in modes] == ["plan", "auto-edit"]
    mode_at = modes[1][0]
    assert kinds[mode_at + 1] == "config_option_update"
    assert everything.index(planned) < mode_at < everything.index(approved)
    options = everything[mode_at + 1]["configOptions"]
    assert [o["currentValue"] for o in options if o["id"] == "mode"] == ["auto-edit"]
    settings = json.loads((state_dir / "sessions" / sid / "settings.json").read_text())
    assert settings["mode"] == "auto-edit"
    results = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert [r["isError"] for r in results] == [True, False, False, False], "journaled as any tool"
    # offered to the model only while in plan mode
    offered = ["exit_plan_mode" in r["tools"] for r in read_requests(requests)]
    assert offered == [True, True, True, False, False]


async def test_a_declined_plan_keeps_plan_mode(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    client = RecordingClient(advertise_fs=False, permission="keep-planning")
    path = script(
        tmp_path,
        call("c1", "exit_plan_mode", plan="1. nothing"),
        call("c2", "run_command", command="touch ran"),
    )
    async with recorded_agent(client, serve_command(path), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.conn.set_session_mode(session_id=sid, mode_id="plan")
        await agent.prompt_text(sid, "plan")
        updates = turn_updates(agent, sid, "plan")
    declined, command = finals(updates)
    assert declined["status"] == "failed"
    assert "keep planning: the session stays in plan mode" in tool_text(declined)
    assert command["status"] == "failed" and "plan mode" in tool_text(command)
    assert not (workspace / "ran").exists()
    assert [u for u in updates if u["sessionUpdate"] == "current_mode_update"] == []
    settings = json.loads((state_dir / "sessions" / sid / "settings.json").read_text())
    assert settings["mode"] == "plan"
    results = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert [r["isError"] for r in results] == [True, True]


async def test_multi_edit_glob_and_web_fetch_over_the_wire(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.py").write_text("x = 1\ny = 2\n", encoding="utf-8")
    config = tmp_path / "config.toml"
    config.write_text("[web_fetch]\nallow_private = true  # the test server is on loopback\n")
    client = RecordingClient(real_fs=True, permission="allow_always")
    with loopback_server() as server:
        edits = [
            {"old_string": "x = 1", "new_string": "x = 10"},
            {"old_string": "y = 2", "new_string": "y = 20"},
        ]
        path = script(
            tmp_path,
            call("c1", "multi_edit", path="a.py", edits=edits),
            call("c2", "glob", pattern="**/*.py"),
            call("c3", "web_fetch", url=server.url("/page.html")),
            call("c4", "web_fetch", url=server.url("/notes.md")),
            call("c5", "web_fetch", url="file:///etc/passwd"),
        )
        command = serve_command(path, "--config", str(config))
        async with recorded_agent(client, command, env=agent_env) as agent:
            sid = await agent.handshake(workspace)
            await agent.prompt_text(sid, "go")
            updates = turn_updates(agent, sid, "go")
    target = str(workspace / "a.py")
    assert client.written == {target: "x = 10\ny = 20\n"}, "one write, through the client"
    asked = [(r.tool_call.tool_call_id, r.tool_call.kind) for r in client.permission_requests]
    assert asked == [("c1", "edit"), ("c3", "fetch")], "one question per edit call and per host"
    diff = {
        "type": "diff",
        "path": target,
        "oldText": "x = 1\ny = 2\n",
        "newText": "x = 10\ny = 20\n",
    }
    multi, found, page, notes, refused = finals(updates)
    assert multi["content"][0] == diff and "2 edits" in tool_text(multi)
    assert tool_text(found) == "a.py"
    assert page["status"] == "completed" and "# Hello" in tool_text(page)
    assert "<script>" not in tool_text(page)
    assert notes["status"] == "completed" and tool_text(notes).endswith("# Notes\n\n- a\n")
    assert refused["status"] == "failed" and "only http:// and https://" in tool_text(refused)
    starts = {u["toolCallId"]: u for u in updates if u["sessionUpdate"] == "tool_call"}
    assert (starts["c2"]["kind"], starts["c3"]["kind"]) == ("search", "fetch")
    results = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert [r["isError"] for r in results] == [False, False, False, False, True]
