"""A rich session survives the process: ``session/load`` replays it exactly, the model sees it.

Every test here runs the real agent as a subprocess and drives it with the official Python ACP
client (``recorded_agent`` validates every frame against the ACP v1 schema). The rich session is
built once per test by ``build_rich_session``: two ordinary turns, a two-call ``read_file`` batch,
an idle injection, a turn that streams while a context is injected (staged) and the prompt is
steered, a prompt blocked by a ``prompt_submit`` hook, and a cancelled turn; then
``session/close`` and the process ends. A *new* process then loads (or resumes) it.

The replay is pinned by ``fixtures/golden/load_replay.json`` (rewrite it with ``UPDATE_GOLDEN=1``).
"Model-visible = logged": the first request after the load carries exactly
``derive_messages`` of the journal's entries up to that request's ``step/start``, compared in the
JSON encoding the script model logs.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from acp_agent.api import Agent
from acp_agent.model.script import ScriptModel
from tests.integration.support import check_journal, read_call, serve_command, write_script
from tests.support.durability import (
    Normalizer,
    agent_said,
    golden,
    initialize,
    inject,
    journal_file,
    journal_history_for,
    last_request_id,
    logged_requests,
    text,
    until,
    updates_before_response,
    when_idle,
)
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent

pytestmark = pytest.mark.subprocess

ADMISSION_HOOK = """\
import json, sys
event = json.load(sys.stdin)
text = "".join(block.get("text", "") for block in event["prompt"])
if "forbidden" in text:
    print(json.dumps({"decision": "block", "reason": "no forbidden words"}))
"""


# --- building the rich session ----------------------------------------------------------------


@dataclass(frozen=True)
class RichSession:
    session_id: str
    workspace: Path
    journal_types: list[str]


def hook_config(tmp_path: Path) -> Path:
    hook = tmp_path / "admit.py"
    hook.write_text(ADMISSION_HOOK)
    config = tmp_path / "config.toml"
    config.write_text(
        f"[[hooks.prompt_submit]]\ncommand = {json.dumps([sys.executable, str(hook)])}\n"
    )
    return config


async def build_rich_session(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> RichSession:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "b.txt").write_text("beta\n")
    script = write_script(
        tmp_path / "build.jsonl",
        {"thought": "pondering", "text": "hello back"},
        {"toolCalls": [read_call("c1", "a.txt"), read_call("c2", "b.txt")]},
        {"text": "both read"},
        {"chunks": ["one ", "two ", "three"], "delayMs": 150},
        {"text": "steered reply"},
        {"chunks": ["partial "], "hang": True},
    )
    command = serve_command(script, "--config", str(hook_config(tmp_path)))
    client = RecordingClient(real_fs=True)
    async with recorded_agent(client, command, env=agent_env, use_unstable_protocol=True) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "hello")).stop_reason == "end_turn"
        assert (await agent.prompt_text(sid, "read a and b")).stop_reason == "end_turn"

        idle = await inject(agent, sid, "idle note")
        assert idle["placement"] == "appended"
        assert (await when_idle(agent, sid))["journal"]["healthy"] is True

        streaming = asyncio.create_task(agent.prompt_text(sid, "stream please"))
        await until(lambda: agent_said(agent, sid, "one "), "the first streamed chunk")
        staged = await inject(
            agent, sid, text("staged note"), source={"kind": "plugin", "name": "notes"}
        )
        steered = await agent.conn.ext_method(
            "acp_agent/steer", {"sessionId": sid, "prompt": text("and also this")}
        )
        assert staged["placement"] == "staged"
        assert steered == {"outcome": "steered"}
        assert (await streaming).stop_reason == "end_turn"

        blocked = await agent.prompt_text(sid, "a forbidden fruit")
        assert blocked.stop_reason == "refusal"

        hanging = asyncio.create_task(agent.prompt_text(sid, "wait forever"))
        await until(lambda: agent_said(agent, sid, "partial "), "the hanging turn's chunk")
        await agent.conn.cancel(session_id=sid)
        assert (await hanging).stop_reason == "cancelled"

        await agent.conn.close_session(session_id=sid)
    journal = check_journal(state_dir, sid, workspace)
    return RichSession(sid, workspace, journal.types())


EXPECTED_TYPES = [
    # turn 1: thought + text
    "turn/start", "user/message", "step/start", "assistant/message", "step/end", "turn/end",
    # turn 2: a two-call batch, then the answer
    "turn/start", "user/message", "step/start", "assistant/message", "tool/call", "tool/call",
    "tool/result", "tool/result", "step/end", "step/start", "assistant/message", "step/end",
    "turn/end",
    # the idle injection
    "user/message",
    # turn 3: streamed, a staged context and steering drained at the step boundary
    "turn/start", "user/message", "step/start", "assistant/message", "step/end",
    "user/message", "steering/message", "step/start", "assistant/message", "step/end",
    "turn/end",
    # (the blocked prompt wrote nothing) turn 4: cancelled mid-stream
    "turn/start", "user/message", "step/start", "assistant/message", "step/end", "turn/end",
]  # fmt: skip


# The updates a replay is made of; others (available commands, titles) are session-level.
HISTORY_KINDS = frozenset(
    {
        "user_message_chunk",
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
    }
)


# --- the tests --------------------------------------------------------------------------------


async def test_load_in_a_new_process_replays_the_golden_history_and_the_model_sees_the_journal(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    rich = await build_rich_session(tmp_path, workspace, state_dir, agent_env)
    assert rich.journal_types == EXPECTED_TYPES
    before = journal_file(state_dir, rich.session_id).read_bytes()

    log = tmp_path / "after-load.jsonl"
    script = write_script(tmp_path / "load.jsonl", {"text": "welcome back"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with recorded_agent(
        RecordingClient(real_fs=True), serve_command(script), env=env
    ) as agent:
        await initialize(agent)
        start = len(agent.transcript.agent_frames)
        assert await agent.conn.load_session(cwd=str(workspace), session_id=rich.session_id)
        replayed = updates_before_response(agent, start, last_request_id(agent, "session/load"))
        # loading a cleanly closed session changes nothing on disk
        assert journal_file(state_dir, rich.session_id).read_bytes() == before
        response = await agent.prompt_text(rich.session_id, "are you back?")
        assert response.stop_reason == "end_turn"

    assert {params["sessionId"] for params in replayed} == {rich.session_id}
    golden("load_replay.json", Normalizer(rich.session_id, workspace)(replayed))

    (request,) = logged_requests(log)
    assert (request["turn"], request["step"]) == (5, 1)  # turn numbering goes on after the load
    assert request["messages"] == journal_history_for(state_dir, rich.session_id, request)
    texts = [m["content"][0].get("text") for m in request["messages"] if m["role"] == "user"]
    assert texts == [
        "hello", "read a and b", "idle note", "stream please", "staged note", "and also this",
        "wait forever", "are you back?",
    ]  # fmt: skip
    journal = check_journal(state_dir, rich.session_id, workspace)
    assert journal.types() == [
        *EXPECTED_TYPES,
        "turn/start", "user/message", "step/start", "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip


async def test_resume_in_a_new_process_replays_nothing_and_the_model_sees_the_journal(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    rich = await build_rich_session(tmp_path, workspace, state_dir, agent_env)
    log = tmp_path / "after-resume.jsonl"
    script = write_script(tmp_path / "resume.jsonl", {"text": "resumed"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with recorded_agent(
        command=serve_command(script), env=env, use_unstable_protocol=True
    ) as agent:
        await initialize(agent)
        start = len(agent.transcript.agent_frames)
        await agent.conn.resume_session(session_id=rich.session_id, cwd=str(workspace))
        request_id = last_request_id(agent, "session/resume")
        assert updates_before_response(agent, start, request_id) == []
        response = await agent.prompt_text(rich.session_id, "still there?")
        assert response.stop_reason == "end_turn"
        # no replay after the response either: of the history kinds, only the new turn's text
        # (session-level advertisements such as available_commands_update may come and go)
        kinds = [u["sessionUpdate"] for u in agent.transcript.session_updates(rich.session_id)]
        assert [k for k in kinds if k in HISTORY_KINDS] == ["agent_message_chunk"], kinds
    (request,) = logged_requests(log)
    assert (request["turn"], request["step"]) == (5, 1)
    assert request["messages"] == journal_history_for(state_dir, rich.session_id, request)
    assert request["messages"][-1]["content"] == text("still there?")
    check_journal(state_dir, rich.session_id, workspace)


async def test_list_shows_title_and_updated_at_and_filters_by_cwd(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = write_script(tmp_path / "s.jsonl", {"text": "one"}, {"text": "two"})
    async with recorded_agent(
        command=serve_command(script), env=agent_env, use_unstable_protocol=True
    ) as agent:
        here = await agent.handshake(workspace)
        began = time.time()
        await agent.prompt_text(here, "Fix   the\nbuild please")
        there = (await agent.conn.new_session(cwd=str(elsewhere), mcp_servers=[])).session_id
        await agent.prompt_text(there, "other work")
        await agent.conn.close_session(session_id=here)
        everything = await agent.conn.list_sessions()
        only_here = await agent.conn.list_sessions(cwd=str(workspace))
        only_there = await agent.conn.list_sessions(cwd=str(elsewhere))
        nowhere = await agent.conn.list_sessions(cwd=str(tmp_path / "nothing"))
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        after_restart = await agent.conn.list_sessions()

    assert after_restart == everything  # titles and times come from disk, not from memory
    by_id = {s.session_id: s for s in everything.sessions}
    assert set(by_id) == {here, there}
    assert everything.next_cursor is None
    assert by_id[here].title == "Fix the build please"  # whitespace folded to one line
    assert by_id[there].title == "other work"
    assert by_id[here].cwd == str(workspace) and by_id[there].cwd == str(elsewhere)
    for info in everything.sessions:
        assert info.updated_at is not None
        stamp = datetime_of(info.updated_at)
        assert began - 5 <= stamp <= time.time() + 5, info.updated_at
    # newest first: `there` was written last
    assert [s.session_id for s in everything.sessions] == [there, here]
    assert [s.session_id for s in only_here.sessions] == [here]
    assert [s.session_id for s in only_there.sessions] == [there]
    assert nowhere.sessions == []


def datetime_of(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


async def test_list_pages_over_250_sessions_with_each_exactly_once(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    model = ScriptModel(write_script(tmp_path / "empty.jsonl"))
    created: list[str] = []
    async with Agent.open(state_dir, model) as api:
        for n in range(250):
            cwd = other if n % 5 == 0 else workspace
            session = await api.new_session(cwd, session_id=f"bulk-{n:03d}")
            await session.inject(f"note {n}")
            created.append(session.id)
        await api.dispose()

    async def all_pages(agent: RecordedAgent, cwd: str | None) -> tuple[list[str], int]:
        seen: list[str] = []
        cursor: str | None = None
        pages = 0
        while True:
            page = await agent.conn.list_sessions(cwd=cwd, cursor=cursor)
            pages += 1
            seen += [s.session_id for s in page.sessions]
            cursor = page.next_cursor
            if cursor is None:
                return seen, pages
            assert pages < 50, "the cursor never ends"

    script = write_script(tmp_path / "s.jsonl")
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        seen, pages = await all_pages(agent, None)
        seen_here, _ = await all_pages(agent, str(workspace))
        seen_other, _ = await all_pages(agent, str(other))
        with pytest.raises(RequestError) as bad:
            await agent.conn.list_sessions(cursor="not a cursor!")
        # page again, and touch two sessions after the first page: one already seen, one on
        # the last page; each moves to the front (newest), the others must not shift
        first = await agent.conn.list_sessions()
        touched = [first.sessions[3].session_id, seen[-2]]
        for sid in touched:
            await agent.conn.load_session(cwd=str(workspace), session_id=sid)
            await inject(agent, sid, "touched")
            await when_idle(agent, sid)
        moving = [s.session_id for s in first.sessions]
        cursor = first.next_cursor
        while cursor is not None:
            page = await agent.conn.list_sessions(cursor=cursor)
            moving += [s.session_id for s in page.sessions]
            cursor = page.next_cursor
    untouched = [sid for sid in moving if sid not in touched]
    assert sorted(untouched) == sorted(set(created) - set(touched))  # each exactly once
    assert all(moving.count(sid) <= 1 for sid in touched)
    assert pages >= 3  # more than one page, so the cursor was really used
    assert len(seen) == len(set(seen)) == 250
    assert sorted(seen) == sorted(created)
    assert sorted(seen_here) == [s for n, s in enumerate(created) if n % 5]
    assert sorted(seen_other) == [s for n, s in enumerate(created) if n % 5 == 0]
    assert bad.value.code == -32602


async def test_a_second_process_cannot_load_a_session_the_first_holds_open(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "first"}, {"text": "still mine"})
    other_script = write_script(tmp_path / "other.jsonl", {"text": "never"})
    async with recorded_agent(command=serve_command(script), env=agent_env) as first:
        sid = await first.handshake(workspace)
        await first.prompt_text(sid, "hello")
        before = journal_file(state_dir, sid).read_bytes()
        async with recorded_agent(command=serve_command(other_script), env=agent_env) as second:
            await initialize(second)
            started = time.monotonic()
            with pytest.raises(RequestError) as refused:
                await asyncio.wait_for(
                    second.conn.load_session(cwd=str(workspace), session_id=sid), 5
                )
            elapsed = time.monotonic() - started
            with pytest.raises(RequestError) as prompt_refused:
                await second.prompt_text(sid, "let me in")
        # the first process still owns and serves the session
        assert (await first.prompt_text(sid, "still there")).stop_reason == "end_turn"
    assert elapsed < 2.0, f"the refusal took {elapsed:.2f}s"
    error = refused.value
    # a server-side refusal naming the reason and the holder, not "no such session" (which
    # would invite the client to start over) and not a complaint about the request
    assert error.code not in (-32002, -32600, -32601, -32602), (error.code, str(error))
    data: dict[str, Any] = error.data or {}
    assert data.get("reason") == "journal_locked", data
    assert data.get("sessionId") == sid, data
    assert "already open" in str(error) and f"pid {first.process.pid}" in str(error), str(error)
    assert prompt_refused.value.code == -32002  # not loaded there, so not a session there
    assert second.transcript.session_updates(sid) == []  # no replay, no fresh session
    journal = check_journal(state_dir, sid, workspace)
    assert journal_file(state_dir, sid).read_bytes().startswith(before)
    assert journal.types().count("turn/start") == 2


async def test_close_releases_the_session_to_this_and_to_another_process(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "one"}, {"text": "two"})
    other_script = write_script(tmp_path / "other.jsonl", {"text": "three"})
    async with recorded_agent(
        command=serve_command(script), env=agent_env, use_unstable_protocol=True
    ) as first:
        sid = await first.handshake(workspace)
        await first.prompt_text(sid, "before close")
        await first.conn.close_session(session_id=sid)
        with pytest.raises(RequestError) as closed:
            await first.prompt_text(sid, "to a closed session")
        # the first process is still running: another one may now take the session over
        async with recorded_agent(command=serve_command(other_script), env=agent_env) as second:
            await initialize(second)
            start = len(second.transcript.agent_frames)
            await second.conn.load_session(cwd=str(workspace), session_id=sid)
            replay = updates_before_response(second, start, last_request_id(second, "session/load"))
            assert (await second.prompt_text(sid, "in the second")).stop_reason == "end_turn"
        # and back: the first process loads it again from disk
        await first.conn.load_session(cwd=str(workspace), session_id=sid)
        assert (await first.prompt_text(sid, "back in the first")).stop_reason == "end_turn"
    assert closed.value.code == -32002
    texts = [p["update"]["content"].get("text") for p in replay]
    assert texts == ["before close", "one"]
    journal = check_journal(state_dir, sid, workspace)
    assert [m["content"][0]["text"] for m in journal.of_type("user/message")] == [
        "before close",
        "in the second",
        "back in the first",
    ]
    assert [t["turn"] for t in journal.of_type("turn/start")] == [1, 2, 3]


async def test_loading_an_unknown_session_is_resource_not_found(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl")
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        with pytest.raises(RequestError) as missing:
            await agent.conn.load_session(cwd=str(workspace), session_id="no-such-session")
    assert missing.value.code == -32002
    assert not (state_dir / "sessions" / "no-such-session").exists()  # no fresh session


async def test_loading_a_journal_with_a_flipped_byte_fails_clearly_and_leaves_it_unchanged(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"text": "one"}, {"text": "two"}, {"text": "3"})
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        for prompt in ("first", "second", "third"):
            await agent.prompt_text(sid, prompt)
    path = journal_file(state_dir, sid)
    raw = bytearray(path.read_bytes())
    lines = bytes(raw).split(b"\n")
    # flip one bit inside the text of the second prompt, in the middle of the file
    target_line = next(i for i, line in enumerate(lines) if b'"second"' in line)
    offset = sum(len(line) + 1 for line in lines[:target_line])
    flip_at = offset + lines[target_line].index(b'"second"') + 2
    raw[flip_at] ^= 0x01
    path.write_bytes(bytes(raw))
    corrupted = path.read_bytes()
    seq = json.loads(lines[target_line])["seq"]

    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await initialize(agent)
        with pytest.raises(RequestError) as refused:
            await agent.conn.load_session(cwd=str(workspace), session_id=sid)
        assert agent.transcript.session_updates(sid) == []
    error = refused.value
    assert error.code not in (-32002, -32600, -32601, -32602), (error.code, str(error))
    data: dict[str, Any] = error.data or {}
    assert data.get("reason") == "journal_unreadable", data
    described = str(error)
    assert f"seq {seq}" in described, described
    assert f"byte {offset}" in described, described
    assert path.read_bytes() == corrupted  # untouched
    assert not list(path.parent.glob("journal.tail.*"))  # nothing moved aside
