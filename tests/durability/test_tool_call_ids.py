"""Issue 14.2: a session's ACP ``toolCallId``s are unique although the model reuses its own ids.

Many local models number their calls per message (``call_0`` in every step); ACP wants a
``toolCallId`` unique in the session (a client merges two cards of one id). The model keeps
seeing its own ids (the journal's ``callId``, the history it is sent); the client gets a unique
id for every call, in every update of that call (``tool_call``, ``tool_call_update``, the
permission request), live, after a restart (``session/resume``, nothing replayed) and in the
replay of ``session/load``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp_agent.content import TextContent
from acp_agent.journal.events import (
    Entry,
    Event,
    StepEnd,
    StepStart,
    ToolCall,
    ToolResult,
    TurnStart,
    UserMessage,
    source,
)
from acp_agent.journal.recovery import interrupted_turn_repair
from tests.integration.support import check_journal, read_call, serve_command, write_script
from tests.support.acp_schema import JsonObject
from tests.support.durability import (
    initialize,
    last_request_id,
    logged_requests,
    updates_before_response,
)
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent

CALL = "call_0"


def write_call(call_id: str, path: str) -> JsonObject:
    return {"id": call_id, "name": "write_file", "arguments": {"path": path, "content": "x\n"}}


def tool_updates(updates: list[JsonObject]) -> list[tuple[str, str, str]]:
    """(kind, toolCallId, status) of every tool update; a tool_call without status is pending."""
    return [
        (u["sessionUpdate"], u["toolCallId"], u.get("status", ""))
        for u in updates
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]


def announced(trace: list[tuple[str, str, str]]) -> list[str]:
    return [call_id for kind, call_id, _ in trace if kind == "tool_call"]


def statuses(trace: list[tuple[str, str, str]], call_id: str) -> list[str]:
    return [status for _, other, status in trace if other == call_id]


def permission_ids(agent: RecordedAgent) -> list[str]:
    return [
        frame["params"]["toolCall"]["toolCallId"]
        for frame in agent.transcript.agent_frames
        if frame.get("method") == "session/request_permission"
    ]


def model_call_ids(request: JsonObject) -> list[str]:
    """Every tool-call id a model request carries: assistant tool calls and tool results."""
    ids: list[str] = []
    for message in request["messages"]:
        if message["role"] == "assistant":
            ids += [p["id"] for p in message["content"] if p["type"] == "tool-call"]
        elif message["role"] == "tool":
            ids.append(message["callId"])
    return ids


async def test_a_reused_model_call_id_gets_a_unique_tool_call_id_everywhere(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    for name in ("a.txt", "b.txt"):
        (workspace / name).write_text(f"{name}\n", encoding="utf-8")
    files = {str(workspace / n): f"{n}\n" for n in ("a.txt", "b.txt")}
    log = tmp_path / "requests.jsonl"
    env: dict[str, Any] = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    first = write_script(
        tmp_path / "first.jsonl",
        {"toolCalls": [read_call(CALL, "a.txt")]},  # turn 1, step 1
        {"toolCalls": [read_call(CALL, "b.txt")]},  # turn 1, step 2: the same model id
        {"text": "read both"},
        {"toolCalls": [write_call(CALL, "out.txt")]},  # turn 2, step 1: asks permission
        {"text": "wrote it"},
    )
    async with recorded_agent(RecordingClient(files=files), serve_command(first), env=env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "read twice")).stop_reason == "end_turn"
        assert (await agent.prompt_text(sid, "now write")).stop_reason == "end_turn"
        live = tool_updates(agent.transcript.session_updates(sid))
        asked = permission_ids(agent)
    ids = announced(live)
    assert len(ids) == 3 and len(set(ids)) == 3, ids
    assert ids[0] == CALL, "a model id used for the first time is the client's id as it is"
    for call_id in ids:
        assert statuses(live, call_id) == ["pending", "in_progress", "completed"], live
    assert asked == [ids[2]], "the permission request names the write's own card"

    # a new process, resumed (nothing replayed): the model says call_0 once more
    again = write_script(
        tmp_path / "again.jsonl", {"toolCalls": [read_call(CALL, "a.txt")]}, {"text": "again"}
    )
    async with recorded_agent(
        RecordingClient(files=files), serve_command(again), env=env, use_unstable_protocol=True
    ) as agent:
        await initialize(agent)
        await agent.conn.resume_session(session_id=sid, cwd=str(workspace))
        assert (await agent.prompt_text(sid, "once more")).stop_reason == "end_turn"
        resumed = tool_updates(agent.transcript.session_updates(sid))
    (fourth,) = announced(resumed)
    assert fourth not in ids, f"{fourth} repeats an id the client was shown before the restart"
    assert statuses(resumed, fourth) == ["pending", "in_progress", "completed"], resumed

    # session/load replays exactly the ids the client was shown live
    async with recorded_agent(RecordingClient(files=files), serve_command(again), env=env) as agent:
        await initialize(agent)
        start = len(agent.transcript.agent_frames)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        replay = updates_before_response(agent, start, last_request_id(agent, "session/load"))
    replayed = tool_updates([p["update"] for p in replay])
    assert announced(replayed) == [*ids, fourth]
    assert [(k, i, s) for k, i, s in replayed if k == "tool_call_update"] == [
        ("tool_call_update", call_id, "completed") for call_id in [*ids, fourth]
    ]

    # the model saw its own ids throughout; the journal keeps them as callId
    requests = logged_requests(log)
    assert {call_id for r in requests for call_id in model_call_ids(r)} == {CALL}
    assert [len(model_call_ids(r)) for r in requests] == [0, 2, 4, 4, 6, 6, 8]
    journal = check_journal(state_dir, sid, workspace)
    assert {c["callId"] for c in journal.of_type("tool/call")} == {CALL}
    assert {r["callId"] for r in journal.of_type("tool/result")} == {CALL}


def test_recovery_answers_a_reused_call_id_of_the_open_step() -> None:
    """A turn cut open after step 1 answered ``call_0`` and step 2 called ``call_0`` again: the
    repair answers step 2's call (``callId`` alone would take it for answered)."""
    events: list[Event] = [
        TurnStart(1),
        UserMessage("u", [TextContent(text="go")], source("user")),
        StepStart(1, 1),
        ToolCall(1, 1, CALL, "read_file", {"path": "a"}),
        ToolResult(1, 1, CALL, [TextContent(text="a")], False),
        StepEnd(1, 1),
        StepStart(1, 2),
        ToolCall(1, 2, CALL, "read_file", {"path": "b"}),
    ]
    entries = [Entry(seq, 1_767_225_600_000, event) for seq, event in enumerate(events, 1)]
    repair = interrupted_turn_repair(entries)
    results = [e for e in repair if isinstance(e, ToolResult)]
    assert [(r.turn, r.step, r.call_id, r.is_error) for r in results] == [(1, 2, CALL, True)]
