"""Compaction over the ACP wire: ``/compact``, progress updates, replay, automatic compaction.

Every frame is validated against the official ACP v1 schema (``recorded_agent``, ``RawAgent``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp import PROTOCOL_VERSION

from tests.integration.support import (
    check_journal,
    is_update,
    response_index,
    sent_request_id,
    serve_command,
    write_script,
)
from tests.support.recording import RawAgent, RecordedAgent, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

COMPACT_COMMAND = {
    "name": "compact",
    "description": "Summarize older history to free context; recent turns are kept verbatim",
    "input": {"hint": "optional instructions for the summary"},
}


def requests_logged(path: Path) -> list[dict[str, Any]]:
    return read_requests(path)


def user_messages(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("".join(b.get("text", "") for b in m["content"]), m["source"]["kind"])
        for m in request["messages"]
        if m["role"] == "user"
    ]


def update_indexes(agent: RecordedAgent | RawAgent, sid: str, kind: str) -> list[int]:
    frames = agent.transcript.agent_frames
    return [
        i
        for i, frame in enumerate(frames)
        if is_update(frame, sid) and frame["params"]["update"]["sessionUpdate"] == kind
    ]


def journal_check(state_dir: Path, sid: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "acp_agent", "journal", "check", sid]
    return subprocess.run(
        [*command, "--state-dir", str(state_dir)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


async def test_compact_command_journal_and_replay_in_a_fresh_process(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(
        tmp_path / "s.jsonl",
        {"text": "one"},
        {"text": "two"},
        {"text": "SUMMARY: the user said a"},
        {"text": "three"},
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with recorded_agent(command=serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        for text in ("a", "b"):
            assert (await agent.prompt_text(sid, text)).stop_reason == "end_turn"
        compacted = await agent.prompt_text(sid, "/compact")
        assert (await agent.prompt_text(sid, "c")).stop_reason == "end_turn"
    assert compacted.stop_reason == "end_turn"

    # /compact is advertised once the client knows the session (after the session/new answer)
    frames = agent.transcript.agent_frames
    new_answer = response_index(frames, sent_request_id(agent.transcript, "session/new"))
    advertised = update_indexes(agent, sid, "available_commands_update")
    assert len(advertised) == 1 and advertised[0] == new_answer + 1
    commands = frames[advertised[0]]["params"]["update"]["availableCommands"]
    assert commands[0] == COMPACT_COMMAND  # the others: tests/integration/test_commands_wire.py
    assert update_indexes(agent, sid, "compaction_update") == []  # the client did not opt in

    journal = check_journal(state_dir, sid, workspace)
    at = journal.types().index("session/compaction")
    assert journal.types()[at - 1 : at + 2] == ["turn/end", "session/compaction", "turn/start"]
    [event] = journal.of_type("session/compaction")
    assert event["summary"] == [{"type": "text", "text": "SUMMARY: the user said a"}]
    assert event["reason"] == "manual"
    assert event["keptFromSeq"] == event["throughSeq"] + 1
    assert journal.events[event["keptFromSeq"] - 1]["data"] == {"turn": 2}  # turn 2 kept
    checked = journal_check(state_dir, sid)
    assert checked.returncode == 0, checked.stdout + checked.stderr

    logged = requests_logged(log)
    assert [(r["turn"], r["step"]) for r in logged] == [(1, 1), (2, 1), (0, 0), (3, 1)]
    assert user_messages(logged[3]) == [
        ("SUMMARY: the user said a", "compaction"),
        ("b", "user"),
        ("c", "user"),
    ]

    # a fresh process loads the session: the user sees what was summarized, in place
    async with recorded_agent(command=serve_command(script), env=agent_env) as loader:
        await loader.conn.initialize(
            protocol_version=PROTOCOL_VERSION, client_capabilities=loader.client.capabilities()
        )
        await loader.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    replayed = loader.transcript.session_updates(sid)
    texts = [
        (u["sessionUpdate"], u["content"]["text"])
        for u in replayed
        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
    ]
    assert texts == [
        ("user_message_chunk", "a"),
        ("agent_message_chunk", "one"),
        ("user_message_chunk", "b"),
        ("agent_message_chunk", "two"),
        ("agent_message_chunk", "SUMMARY: the user said a"),
        ("user_message_chunk", "c"),
        ("agent_message_chunk", "three"),
    ]
    summary = next(u for u in replayed if u.get("content", {}).get("text", "").startswith("SUMM"))
    assert summary["_meta"]["acp_agent"]["compaction"] == {
        "id": event["id"],
        "reason": "manual",
        "throughSeq": event["throughSeq"],
        "keptFromSeq": event["keptFromSeq"],
    }
    load_answer = response_index(
        loader.transcript.agent_frames, sent_request_id(loader.transcript, "session/load")
    )
    assert update_indexes(loader, sid, "available_commands_update") == [load_answer + 1]


async def test_compaction_updates_for_a_client_that_supports_them(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "one"}, {"text": "S"})
    async with RawAgent(serve_command(script), env=agent_env) as raw:
        capabilities: dict[str, Any] = {"session": {"compaction": {}}}
        await raw.request("initialize", {"protocolVersion": 1, "clientCapabilities": capabilities})
        created = await raw.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        sid = created["result"]["sessionId"]
        prompt = {"sessionId": sid, "prompt": [{"type": "text", "text": "a"}]}
        await raw.request("session/prompt", prompt)
        compact = {"sessionId": sid, "prompt": [{"type": "text", "text": "/compact"}]}
        answer = await raw.request("session/prompt", compact)
        live = raw.transcript.session_updates(sid)
        await raw.request("session/resume", {"sessionId": sid, "cwd": str(workspace)})
        await raw.request("session/load", {"sessionId": sid, "cwd": str(workspace)})
        after_load = await raw.recv()  # the commands follow the answer
        everything = raw.transcript.session_updates(sid)
    assert answer["result"] == {"stopReason": "end_turn"}
    progress = [u for u in live if u["sessionUpdate"] == "compaction_update"]
    assert [u["status"] for u in progress] == ["in_progress", "completed"]
    assert progress[0]["compactionId"] == progress[1]["compactionId"]
    assert progress[1]["summary"] == [{"type": "text", "text": "S"}]
    assert progress[1]["_meta"]["acp_agent"]["compaction"]["reason"] == "manual"
    replayed = everything[len(live) :]
    assert [u["sessionUpdate"] for u in replayed if "compaction" in u["sessionUpdate"]] == [
        "compaction_update"
    ]
    assert [u for u in replayed if u["sessionUpdate"] == "compaction_update"] == progress[1:]
    assert after_load["params"]["update"]["sessionUpdate"] == "available_commands_update"
    assert [u["sessionUpdate"] for u in replayed].count("available_commands_update") == 2


async def test_automatic_compaction_with_a_small_context_window_flag(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(
        tmp_path / "s.jsonl", {"text": "one"}, {"text": "AUTO SUMMARY"}, {"text": "two"}
    )
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    command = serve_command(script, "--context-window", "400")
    async with recorded_agent(command=command, env=env) as agent:
        sid = await agent.handshake(workspace)
        for text in ("a" * 600, "b" * 600):
            assert (await agent.prompt_text(sid, text)).stop_reason == "end_turn"
    journal = check_journal(state_dir, sid, workspace)
    assert journal.types()[6:9] == ["session/compaction", "turn/start", "user/message"]
    [event] = journal.of_type("session/compaction")
    assert event["reason"] == "auto"
    logged = requests_logged(log)
    assert [r["turn"] for r in logged] == [1, 0, 2]
    assert [kind for _, kind in user_messages(logged[2])] == ["compaction", "user"]
