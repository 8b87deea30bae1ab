"""The design note's acceptance criteria over the ACP wire, with the official Python client.

Each test names the criterion of mission/seed-en.md it proves (AC4, AC5, AC6 ...); the API-level
twins are in tests/session/test_design_note.py. Every frame is validated against the ACP schema
by ``recorded_agent``.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import (
    check_journal,
    is_update,
    read_call,
    serve_command,
    write_script,
)
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess


def requests_logged(path: Path) -> list[dict[str, Any]]:
    return read_requests(path)


def user_messages(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        ("".join(b.get("text", "") for b in m["content"]), m["source"]["kind"])
        for m in request["messages"]
        if m["role"] == "user"
    ]


def source_chunks(agent: RecordedAgent, sid: str) -> list[dict[str, Any]]:
    return [
        f["params"]["update"]
        for f in agent.transcript.agent_frames
        if is_update(f, sid) and f["params"]["update"]["sessionUpdate"] == "user_message_chunk"
    ]


async def inject(agent: RecordedAgent, sid: str, text: Any, **extra: Any) -> dict[str, Any]:
    return await agent.conn.ext_method(
        "acp_agent/inject", {"sessionId": sid, "content": text, **extra}
    )


async def when_idle(agent: RecordedAgent, sid: str) -> dict[str, Any]:
    return await agent.conn.ext_method("acp_agent/when_idle", {"sessionId": sid})


class GatedReads(RecordingClient):
    """Answers fs/read_text_file only once the test opens the gate (a tool batch in flight)."""

    def __init__(self, files: dict[str, str]) -> None:
        super().__init__(files=files)
        self.first_read = asyncio.Event()
        self.gate = asyncio.Event()

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        self.first_read.set()
        await self.gate.wait()
        return await super().read_text_file(*args, **kwargs)


def script_env(agent_env: dict[str, str], log: Path) -> dict[str, str]:
    return {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}


async def test_initialize_advertises_the_extensions(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl")
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        await agent.handshake(workspace)
    init = next(f for f in agent.transcript.agent_frames if f.get("id") == 0 or "result" in f)
    meta = init["result"]["agentCapabilities"]["_meta"]
    assert meta == {"acp_agent": {"inject": True, "steer": True, "whenIdle": True}}


async def test_ac4_idle_inject_over_the_wire_appends_reports_and_never_runs_the_model(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl")
    async with recorded_agent(
        command=serve_command(script), env=script_env(agent_env, log)
    ) as agent:
        sid = await agent.handshake(workspace)
        first = await inject(agent, sid, "the build uses make")
        second = await inject(
            agent, sid, [{"type": "text", "text": "ref"}], source={"kind": "x-custom", "n": 1}
        )
        health = await when_idle(agent, sid)
        chunks = source_chunks(agent, sid)
    assert first["placement"] == "appended" and second["placement"] == "appended"
    assert health == {"journal": {"healthy": True, "unflushed": 0, "lastError": None}}
    assert [(c["messageId"], c["_meta"]["acp_agent"]["source"]) for c in chunks] == [
        (first["messageId"], {"kind": "client"}),
        (second["messageId"], {"kind": "x-custom", "n": 1}),  # unknown kinds kept as they are
    ]
    journal = check_journal(state_dir, sid, workspace)
    assert journal.types() == ["user/message", "user/message"]  # no turn, no turn number
    assert not log.exists()  # no model call


async def test_ac5_inject_during_a_tool_batch_lands_after_the_whole_batch(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    files = {str(workspace / "a"): "A", str(workspace / "b"): "B"}
    client = GatedReads(files)
    script = write_script(
        tmp_path / "s.jsonl",
        {"toolCalls": [read_call("c1", "a"), read_call("c2", "b")]},
        {"text": "done"},
    )
    env = script_env(agent_env, log)
    async with recorded_agent(client, serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        turn = asyncio.create_task(agent.prompt_text(sid, "read a and b"))
        await asyncio.wait_for(client.first_read.wait(), 10)
        staged = await inject(agent, sid, "mid-batch context")
        steered = await agent.conn.ext_method(
            "acp_agent/steer", {"sessionId": sid, "prompt": [{"type": "text", "text": "steer"}]}
        )
        client.gate.set()
        assert (await turn).stop_reason == "end_turn"
    assert staged["placement"] == "staged"
    assert steered == {"outcome": "steered"}
    journal = check_journal(state_dir, sid, workspace)
    assert journal.types() == [
        "turn/start", "user/message", "step/start",
        "assistant/message", "tool/call", "tool/call", "tool/result", "tool/result", "step/end",
        "user/message", "steering/message",
        "step/start", "assistant/message", "step/end", "turn/end",
    ]  # fmt: skip
    second = requests_logged(log)[1]
    assert user_messages(second) == [
        ("read a and b", "user"),
        ("mid-batch context", "client"),
        ("steer", "user"),
    ]


async def test_session_steering_extension_answers_with_its_own_words(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "s.jsonl", {"chunks": ["a", "b", "c"], "delayMs": 150}, {"text": "again"}
    )
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        turn = asyncio.create_task(agent.prompt_text(sid, "go"))
        await asyncio.sleep(0.2)
        mid = await agent.conn.ext_method(
            "session/steering", {"sessionId": sid, "prompt": [{"type": "text", "text": "s"}]}
        )
        assert (await turn).stop_reason == "end_turn"
        idle = await agent.conn.ext_method(
            "session/steering", {"sessionId": sid, "prompt": [{"type": "text", "text": "t"}]}
        )
        await when_idle(agent, sid)
    assert mid == {"outcome": "injected"}
    assert idle == {"outcome": "startedNewTurn"}


async def test_failed_idle_flush_is_reported_over_the_wire_never_as_agent_error(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl")
    # fsync #1 is the header at create; #2 is the first flush after it: fail it once
    env = {**agent_env, "ACP_AGENT_JOURNAL_FAULTS": "fsync:eio@2"}
    client = RecordingClient()
    async with recorded_agent(client, serve_command(script), env=env) as agent:
        sid = await agent.handshake(workspace)
        injected = await inject(agent, sid, "must survive")
        health = await when_idle(agent, sid)  # retries the failed lines: now durable
    reports = [p for m, p in client.ext_calls if m == "acp_agent/journal_error"]
    assert len(reports) == 1
    assert reports[0]["sessionId"] == sid and reports[0]["unflushed"] == 1
    assert "Input/output error" in reports[0]["error"]
    assert health == {"journal": {"healthy": True, "unflushed": 0, "lastError": None}}
    journal = check_journal(state_dir, sid, workspace)
    assert journal.types() == ["user/message"]
    assert journal.of_type("user/message")[0]["id"] == injected["messageId"]
    assert "journal_flush_failed" in agent.stderr.decode()


async def test_idle_inject_acknowledged_by_when_idle_survives_sigkill(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl")
    async with recorded_agent(
        command=serve_command(script), env=agent_env, expect_exit_code=None
    ) as agent:
        sid = await agent.handshake(workspace)
        ids = [(await inject(agent, sid, f"note {n}"))["messageId"] for n in range(5)]
        await when_idle(agent, sid)
        os.kill(agent.process.pid, signal.SIGKILL)
        await agent.process.wait()
    journal = check_journal(state_dir, sid, workspace)
    assert [m["id"] for m in journal.of_type("user/message")] == ids
