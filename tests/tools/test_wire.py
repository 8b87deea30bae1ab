"""The tools through a real client: the official Python SDK client (``RecordingClient``, and
``TerminalClient`` / ``HoldingClient`` here) answering ``fs/*``, ``terminal/*`` and permission
requests of the real agent running the script model. Every frame is schema-validated.

Edits produce diffs, denied permission leaves files untouched, paths outside the roots are
refused, a cancelled command's process group is gone, modes gate writes and commands.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    serve_command,
    tool_text,
    turn_updates,
    wait_until,
    write_script,
)
from tests.sandbox.support import DEFAULT_LINE
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent
from tests.support.requests import read_requests
from tests.support.transcript import without_seq
from tests.tools.support import HoldingClient, TerminalClient, call, finals, group_gone, script

pytestmark = pytest.mark.subprocess


def session_new_result(agent: RecordedAgent) -> JsonObject:
    (result,) = [f["result"] for f in agent.transcript.responses() if "modes" in f["result"]]
    return result  # type: ignore[no-any-return]


async def test_an_edit_through_the_client_asks_first_and_shows_a_diff(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    path = workspace / "a.py"
    path.write_text("x = 1\n", encoding="utf-8")
    client = RecordingClient(real_fs=True)
    edit = call("c1", "edit_file", path="a.py", old_string="x = 1", new_string="x = 2")
    async with recorded_agent(
        client, serve_command(script(tmp_path, edit)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "edit")).stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "edit")
    assert client.written == {str(path): "x = 2\n"}, "written through fs/write_text_file"
    assert path.read_text(encoding="utf-8") == "x = 1\n", "the client owns the write"
    (asked,) = client.permission_requests
    assert asked.tool_call.tool_call_id == "c1" and asked.tool_call.title == "Edit a.py"
    options = [(o.option_id, o.kind) for o in asked.options]
    assert options == [
        ("allow_once", "allow_once"),
        ("allow_always", "allow_always"),
        ("allow_project", "allow_always"),
        ("reject_once", "reject_once"),
    ]
    assert asked.options[2].name == "Always allow file edits in this project"
    diff = {"type": "diff", "path": str(path), "oldText": "x = 1", "newText": "x = 2"}
    assert asked.tool_call.model_dump(by_alias=True, exclude_none=True)["content"] == [diff]
    (start,) = [u for u in updates if u["sessionUpdate"] == "tool_call"]
    assert (start["kind"], start["locations"]) == ("edit", [{"path": str(path)}])
    (final,) = finals(updates)
    assert final["status"] == "completed" and final["content"][0] == diff
    assert tool_text(final) == f"Edited {path}: replaced 1 occurrence"
    check_journal(state_dir, sid, workspace)


async def test_without_client_fs_the_agent_writes_the_disk(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    client = RecordingClient(advertise_fs=False)
    write = call("c1", "write_file", path="new/b.txt", content="hello\n")
    async with recorded_agent(
        client, serve_command(script(tmp_path, write)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "write")
        updates = turn_updates(agent, sid, "write")
    target = workspace / "new" / "b.txt"
    assert target.read_text(encoding="utf-8") == "hello\n"
    assert client.written == {} and client.unexpected_calls == []
    (final,) = finals(updates)
    assert final["content"][0] == {"type": "diff", "path": str(target), "newText": "hello\n"}


@pytest.mark.parametrize("answer", ["reject_once", "cancelled"])
async def test_denied_or_cancelled_permission_leaves_files_untouched(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str], answer: str
) -> None:
    path = workspace / "a.py"
    path.write_text("x = 1\n", encoding="utf-8")
    client = RecordingClient(advertise_fs=False, permission=answer)
    calls = (
        call("c1", "edit_file", path="a.py", old_string="x = 1", new_string="x = 2"),
        call("c2", "write_file", path="a.py", content="gone"),
        call("c3", "run_command", command="touch ran"),
    )
    async with recorded_agent(
        client, serve_command(script(tmp_path, *calls)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "try")).stop_reason == "end_turn"
        updates = turn_updates(agent, sid, "try")
    assert path.read_text(encoding="utf-8") == "x = 1\n"
    assert not (workspace / "ran").exists()
    assert len(client.permission_requests) == 3
    expected = "permission denied: the user rejected it" if answer == "reject_once" else "cancelled"
    assert [(u["status"], tool_text(u).startswith(expected)) for u in finals(updates)] == [
        ("failed", True)
    ] * 3
    results = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert [r["isError"] for r in results] == [True] * 3


async def test_paths_outside_the_roots_are_refused_and_additional_directories_count(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    client = RecordingClient(advertise_fs=False)
    calls = (
        call("c1", "write_file", path="../outside.txt", content="no"),
        call("c2", "read_file", path=str(tmp_path / "agent-state" / "x")),
        call("c3", "write_file", path=str(extra / "in.txt"), content="yes"),
        call("c4", "run_command", command="pwd", cwd=".."),
    )
    async with recorded_agent(
        client, serve_command(script(tmp_path, *calls)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace, additional_directories=[str(extra)])
        await agent.prompt_text(sid, "go")
        updates = turn_updates(agent, sid, "go")
        init = agent.transcript.responses()[0]["result"]
    assert init["agentCapabilities"]["sessionCapabilities"]["additionalDirectories"] == {}
    assert not (tmp_path / "outside.txt").exists()
    assert (extra / "in.txt").read_text(encoding="utf-8") == "yes"
    statuses = [(u["status"], "outside the session roots" in tool_text(u)) for u in finals(updates)]
    assert statuses == [("failed", True), ("failed", True), ("completed", False), ("failed", True)]
    assert [r.tool_call.tool_call_id for r in client.permission_requests] == ["c3"]


async def test_relative_additional_directories_are_invalid_params(
    workspace: Path, agent_env: dict[str, str]
) -> None:
    async with recorded_agent(RecordingClient(), env=agent_env) as agent:
        with pytest.raises(Exception, match="absolute") as caught:
            await agent.handshake(workspace, additional_directories=["rel"])
        assert getattr(caught.value, "code", None) == -32602


async def test_a_command_runs_in_the_client_terminal_shown_live(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    client = TerminalClient(advertise_fs=False)
    run = call("c1", "run_command", command="echo hi; exit 4")
    async with recorded_agent(client, serve_command(script(tmp_path, run)), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "run")
        updates = turn_updates(agent, sid, "run")
    ((program, args, cwd),) = client.created  # the sandbox's argv, if any, first
    assert ([program, *args][-3:], cwd) == (["/bin/sh", "-c", "echo hi; exit 4"], str(workspace))
    assert client.released == ["term-1"] and client.unexpected_calls == []
    terminal = {"type": "terminal", "terminalId": "term-1"}
    shown = [u for u in updates if u["sessionUpdate"] == "tool_call_update" and "status" not in u]
    assert [u["content"] for u in shown] == [[terminal]], "embedded before it was released"
    (final,) = finals(updates)
    assert (final["status"], final["content"]) == ("failed", [terminal])
    (result,) = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert result["content"][0]["text"] == f"{DEFAULT_LINE}$ echo hi; exit 4\nhi\n[exit code 4]"


async def test_a_cancelled_command_leaves_no_process_in_its_group(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    client = RecordingClient(advertise_fs=False)
    run = call("c1", "run_command", command="echo $$ > pgid; sleep 60 & sleep 60; wait")
    pgid_file = workspace / "pgid"
    async with recorded_agent(client, serve_command(script(tmp_path, run)), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        prompt = asyncio.create_task(agent.prompt_text(sid, "run"))
        await wait_until(
            lambda: pgid_file.exists() and pgid_file.read_text().endswith("\n"), "pgid"
        )
        pgid = int(pgid_file.read_text())
        await agent.conn.cancel(session_id=sid)
        assert (await prompt).stop_reason == "cancelled"
        assert await group_gone(pgid), "the command's process group outlived the cancel"
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["cancelled"]
    assert [r["isError"] for r in journal.of_type("tool/result")] == [True]


async def test_a_turn_cancelled_while_asking_cancels_the_call(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    client = HoldingClient(advertise_fs=False)
    write = call("c1", "write_file", path="a.txt", content="no")
    async with recorded_agent(
        client, serve_command(script(tmp_path, write)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        prompt = asyncio.create_task(agent.prompt_text(sid, "write"))
        await asyncio.wait_for(client.asked.wait(), 10)
        await agent.conn.cancel(session_id=sid)
        client.release.set()  # then the client answers the request `cancelled`, as ACP says
        assert (await prompt).stop_reason == "cancelled"
    assert not (workspace / "a.txt").exists()
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["cancelled"]
    (result,) = journal.of_type("tool/result")
    assert result["isError"] and "cancelled" in result["content"][0]["text"]


async def test_modes_and_the_mode_option_stay_in_sync(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    client = RecordingClient(advertise_fs=False)
    calls = (
        call("c1", "write_file", path="a.txt", content="read-only"),
        call("c2", "write_file", path="a.txt", content="full"),
        call("c3", "run_command", command="touch ran"),
    )
    lines: list[JsonObject] = [
        {"toolCalls": [calls[0]]},
        {"text": "one"},
        {"toolCalls": list(calls[1:])},
    ]
    path = write_script(tmp_path / "script.jsonl", *lines, {"text": "two"})
    async with recorded_agent(client, serve_command(path), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        result = session_new_result(agent)
        assert result["modes"]["currentModeId"] == "ask"
        assert [m["id"] for m in result["modes"]["availableModes"]] == [
            "read-only",
            "plan",
            "ask",
            "auto-edit",
            "full-access",
        ]
        (option,) = [o for o in result["configOptions"] if o.get("category") == "mode"]
        assert (option["id"], option["type"], option["currentValue"]) == ("mode", "select", "ask")

        await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
        await agent.prompt_text(sid, "in read-only")
        assert not (workspace / "a.txt").exists() and client.permission_requests == []

        answer = await agent.conn.set_config_option(
            config_id="mode", session_id=sid, value="full-access"
        )
        (mode,) = [o for o in answer.config_options if o.id == "mode"]
        assert mode.current_value == "full-access"
        await agent.prompt_text(sid, "in full access")
        with pytest.raises(Exception, match="unknown mode") as caught:
            await agent.conn.set_session_mode(session_id=sid, mode_id="yolo")
        assert getattr(caught.value, "code", None) == -32602
        updates = agent.transcript.session_updates(sid)
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "full"
    assert (workspace / "ran").exists() and client.permission_requests == []
    modes = [u["currentModeId"] for u in updates if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["read-only", "full-access"]
    options = [
        o["currentValue"]
        for u in updates
        if u["sessionUpdate"] == "config_option_update"
        for o in u["configOptions"]
        if o["id"] == "mode"
    ]
    assert options == ["read-only", "full-access"]


async def test_allow_always_is_remembered_for_the_session(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    client = RecordingClient(advertise_fs=False, permission="allow_always")
    calls = (
        call("c1", "write_file", path="a.txt", content="1"),
        call("c2", "edit_file", path="a.txt", old_string="1", new_string="2"),
        call("c3", "run_command", command="echo one"),
        call("c4", "run_command", command="echo two"),
        call("c5", "run_command", command="ls"),
    )
    async with recorded_agent(
        client, serve_command(script(tmp_path, *calls)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "go")
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "2"
    asked = [r.tool_call.tool_call_id for r in client.permission_requests]
    assert asked == ["c1", "c3", "c5"]


async def test_the_plan_is_sent_and_replayed_with_the_diffs(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    todos = [{"content": "edit", "status": "in_progress"}, {"content": "test", "status": "pending"}]
    calls = (
        call("c1", "todo_write", todos=todos),
        call("c2", "write_file", path="a.txt", content="x"),
    )
    client = RecordingClient(advertise_fs=False)
    async with recorded_agent(
        client, serve_command(script(tmp_path, *calls)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "plan")
        updates = agent.transcript.session_updates(sid)
        live = [without_seq(u) for u in updates if u["sessionUpdate"] == "plan"]
        live_final = finals(turn_updates(agent, sid, "plan"))
    assert live == [
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "edit", "priority": "medium", "status": "in_progress"},
                {"content": "test", "priority": "medium", "status": "pending"},
            ],
        }
    ]
    async with recorded_agent(RecordingClient(), env=agent_env) as agent:
        await agent.conn.initialize(protocol_version=1, client_capabilities=None)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        replayed = agent.transcript.session_updates(sid)
    assert [without_seq(u) for u in replayed if u["sessionUpdate"] == "plan"] == live
    assert [u for u in replayed if u.get("status") in ("completed", "failed")] == live_final


async def test_workspace_instructions_are_injected_context(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "AGENTS.md").write_text("Always use tabs.\n", encoding="utf-8")
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    path = write_script(tmp_path / "script.jsonl", {"text": "ok"})
    src = {"kind": "plugin", "name": "workspace-instructions", "path": str(workspace / "AGENTS.md")}
    text = "Workspace instructions from AGENTS.md:\n\nAlways use tabs."
    async with recorded_agent(RecordingClient(), serve_command(path), env=env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "hi")
        chunks = [
            u
            for u in agent.transcript.session_updates(sid)
            if u["sessionUpdate"] == "user_message_chunk"
        ]
    assert [(c["content"]["text"], c["_meta"]["acp_agent"]["source"]) for c in chunks] == [
        (text, src)
    ]
    journal = check_journal(state_dir, sid, workspace)
    assert journal.types()[:2] == ["user/message", "turn/start"], "journaled before the turn"
    assert journal.of_type("user/message")[0]["source"] == src
    (logged,) = read_requests(requests)
    assert [(m["role"], m.get("source")) for m in logged["messages"]] == [
        ("user", src),
        ("user", {"kind": "user"}),
    ]
