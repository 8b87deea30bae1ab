"""The official Python SDK (``agent-client-protocol``) as a client, through its typed methods:
what ``tests/integration/test_sdk_client.py`` does not already cover.

- the unstable session methods one after another on one agent, as a client using
  ``use_unstable_protocol=True`` would: list, set_session_mode and set_config_option (kept in
  sync), close, and ``session/resume`` on a fresh agent process (``session/fork`` is not in the
  stable schema these frames are validated against: ``tests/fork/test_wire.py``);
- ``_session/steering`` the way claude-agent-acp / codex-acp clients send it (through the SDK's
  ``ext_method``, which adds the ``_``): gated on the ``initialize`` result's
  ``_meta.steering.supported``, ``injected`` into a running turn, ``startedNewTurn`` when idle.

``recorded_agent`` validates every frame the agent wrote against the ACP v1 schema.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    serve_command,
    turn_updates_so_far,
    wait_until,
    write_script,
)
from tests.support.recording import recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess


async def test_unstable_session_methods(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"text": "first"})
    async with recorded_agent(
        command=serve_command(script), env=agent_env, use_unstable_protocol=True
    ) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "hello")).stop_reason == "end_turn"

        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert [s.session_id for s in listed.sessions] == [sid]
        assert listed.sessions[0].cwd == str(workspace)

        await agent.conn.set_session_mode(session_id=sid, mode_id="auto-edit")
        changed = await agent.conn.set_config_option(
            config_id="mode", session_id=sid, value="read-only"
        )
        (mode,) = [o for o in changed.config_options if o.id == "mode"]
        assert mode.current_value == "read-only"
        await wait_until(
            lambda: (
                [
                    u["currentModeId"]
                    for u in agent.transcript.session_updates(sid)
                    if u["sessionUpdate"] == "current_mode_update"
                ]
                == ["auto-edit", "read-only"]
            ),
            what="both mode changes announced as current_mode_update",
        )

        second = await agent.conn.new_session(cwd=str(workspace), mcp_servers=[])
        listed = await agent.conn.list_sessions(cwd=str(workspace))
        assert {s.session_id for s in listed.sessions} == {sid, second.session_id}
        await agent.conn.close_session(session_id=second.session_id)
        await agent.conn.close_session(session_id=sid)

    # A new agent process picks the session up again without a replay.
    async with recorded_agent(
        command=serve_command(script), env=agent_env, use_unstable_protocol=True
    ) as again:
        await again.conn.initialize(protocol_version=1)
        resumed = await again.conn.resume_session(session_id=sid, cwd=str(workspace))
        assert resumed.modes is not None
        assert not [
            u
            for u in again.transcript.session_updates(sid)
            if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk")
        ], "session/resume replayed the conversation"

    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed"]


async def test_session_steering_extension(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"chunks": ["working", " on", " it"], "delayMs": 250},
        {"text": "noted the steer"},
        {"text": "a turn of its own"},
    )
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    async with recorded_agent(command=serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        init = agent.transcript.agent_frames[0]["result"]
        # What claude-agent-acp / codex-acp clients check before they steer.
        assert init["_meta"]["steering"]["supported"] is True

        running = asyncio.create_task(agent.prompt_text(sid, "a long job"))
        await wait_until(lambda: any(turn_updates_so_far(agent, sid)), what="the first chunk")
        steer = {"sessionId": sid, "prompt": [{"type": "text", "text": "keep it short"}]}
        assert await agent.conn.ext_method("session/steering", steer) == {"outcome": "injected"}
        assert not running.done()
        assert (await running).stop_reason == "end_turn"
        assert agent.client.agent_text(sid) == "working on itnoted the steer"

        idle = {"sessionId": sid, "prompt": [{"type": "text", "text": "one more thing"}]}
        answer = await agent.conn.ext_method("session/steering", idle)
        assert answer == {"outcome": "startedNewTurn"}
        health = await agent.conn.ext_method("acp_agent/when_idle", {"sessionId": sid})
        assert health["journal"]["healthy"] is True
        assert agent.client.agent_text(sid).endswith("a turn of its own")

    asked = read_requests(requests)
    assert [(r["turn"], r["step"]) for r in asked] == [(1, 1), (1, 2), (2, 1)]
    assert asked[1]["messages"][-1]["content"] == [{"type": "text", "text": "keep it short"}]
    assert asked[2]["messages"][-1]["content"] == [{"type": "text", "text": "one more thing"}]
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed", "completed"]
    (steered,) = journal.of_type("steering/message")
    assert steered["turn"] == 1
    assert steered["content"] == [{"type": "text", "text": "keep it short"}]


async def test_session_steering_with_idle_behavior_prompt_required(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """Newer claude-agent-acp / codex-acp clients steer with ``_meta.steering.idleBehavior:
    "promptRequired"``: into a running turn as before; with none running, nothing happens and
    the answer says so, and the client sends the text as a prompt of its own."""
    script = write_script(
        tmp_path / "script.jsonl",
        {"chunks": ["working", " on", " it"], "delayMs": 250},
        {"text": "noted the steer"},
        {"text": "the prompt it became"},
    )
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    meta = {"steering": {"idleBehavior": "promptRequired"}}
    async with recorded_agent(command=serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, "a long job"))
        await wait_until(lambda: any(turn_updates_so_far(agent, sid)), what="the first chunk")
        steer = {"sessionId": sid, "prompt": [{"type": "text", "text": "shorter"}], "_meta": meta}
        assert await agent.conn.ext_method("session/steering", steer) == {"outcome": "injected"}
        assert (await running).stop_reason == "end_turn"

        idle = {"sessionId": sid, "prompt": [{"type": "text", "text": "and?"}], "_meta": meta}
        answer = await agent.conn.ext_method("session/steering", idle)
        assert answer == {"outcome": "promptRequired", "reason": "noRunningTurn"}
        health = await agent.conn.ext_method("acp_agent/when_idle", {"sessionId": sid})
        assert health["journal"]["healthy"] is True
        assert len(read_requests(requests)) == 2  # no model request for the refused steer
        assert (await agent.prompt_text(sid, "and?")).stop_reason == "end_turn"

    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed", "completed"]
    assert len(journal.of_type("steering/message")) == 1
    prompts = [e["content"][0]["text"] for e in journal.of_type("user/message")]
    assert prompts == ["a long job", "and?"]  # the refused steer wrote nothing
