"""kill -9 inside a tool batch (reliability.md scenario 1, issue 14): a result the client was told
``completed`` is never recovered as ``interrupted``.

A three-tool batch — ``write_file`` (the side effect: the client writes the file), then two
``read_file``s the client answers slowly — runs under ``bench/sync_counting_agent.py`` with every
``fdatasync`` slowed, so each barrier takes long enough for a kill to land inside it. For each k
in 1..3 the agent is SIGKILLed the moment the client sees the k-th call ``completed`` (for k < 3,
while the next tool of the batch runs; for k = 3, around the step boundary). A new process loads
the session, and then:

- every call the client saw ``completed`` has its own result in the journal — not an error, not
  the synthetic "interrupted" one — and the load's replay reports it ``completed`` again;
- the calls after it are answered by recovery (``interrupted``) or by their own result, and the
  turn is closed ``interrupted``;
- the journal holds the invariant (the checker, the schema, ``acp-agent journal check``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from acp_agent.journal.recovery import INTERRUPTED_TOOL_TEXT
from bench import sync_counting_agent
from tests.integration.support import check_journal, read_call, serve_command, write_script
from tests.support.acp_schema import JsonObject
from tests.support.durability import (
    check_frames_of_killed,
    initialize,
    journal_check_cli,
    killable_agent,
    last_request_id,
    sigkill,
    until,
    updates_before_response,
)
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

SYNC_DELAY_MS = 150
READ_DELAY = 0.3
CALLS = ("w1", "r2", "r3")
BATCH = {
    "toolCalls": [
        {"id": "w1", "name": "write_file", "arguments": {"path": "out.txt", "content": "done\n"}},
        read_call("r2", "a.txt"),
        read_call("r3", "b.txt"),
    ]
}

AFTER = {"chunks": ["all ", "done"], "delayMs": 1000}
"""The answer after the batch streams slowly: the kill always lands inside the turn."""


class SlowReads(RecordingClient):
    """Writes at once, answers ``fs/read_text_file`` after a pause: a kill lands mid-tool."""

    async def read_text_file(self, *args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(READ_DELAY)
        return await super().read_text_file(*args, **kwargs)


def completed_calls(updates: list[JsonObject]) -> list[str]:
    return [
        u["toolCallId"]
        for u in updates
        if u["sessionUpdate"] == "tool_call_update" and u.get("status") == "completed"
    ]


def told(agent: RecordedAgent, sid: str) -> list[str]:
    """The calls the client has been told ``completed`` so far."""
    return completed_calls(agent.transcript.session_updates(sid))


def result_text(result: JsonObject) -> str:
    return "".join(block.get("text", "") for block in result["content"])


@pytest.mark.parametrize("k", [1, 2, 3])
async def test_a_kill_after_a_tools_result_keeps_every_result_reported_completed(
    k: int, tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    (workspace / "b.txt").write_text("beta\n", encoding="utf-8")
    files = {str(workspace / "a.txt"): "alpha\n", str(workspace / "b.txt"): "beta\n"}
    script = write_script(tmp_path / "script.jsonl", BATCH, AFTER)
    env = {
        **agent_env,
        sync_counting_agent.ENV: str(tmp_path / "syncs.jsonl"),
        sync_counting_agent.DELAY_ENV: str(SYNC_DELAY_MS),
    }
    command = sync_counting_agent.command("--model", f"script:{script}")
    client = SlowReads(files=files)
    async with killable_agent(
        client, command, env=env, validate=False, expect_exit_code=None
    ) as agent:
        sid = await agent.handshake(workspace)
        turn = asyncio.create_task(agent.prompt_text(sid, "write, then read twice"))
        try:
            await until(lambda: CALLS[k - 1] in told(agent, sid), f"{CALLS[k - 1]}", within=20)
            await sigkill(agent)
            reported = told(agent, sid)
        finally:
            turn.cancel()
            await asyncio.gather(turn, return_exceptions=True)
    check_frames_of_killed(agent)
    assert reported[:k] == list(CALLS[:k]), reported
    assert client.written == {str(workspace / "out.txt"): "done\n"}  # the side effect happened

    async with recorded_agent(
        RecordingClient(files=files), serve_command(script), env=agent_env
    ) as again:
        await initialize(again)
        start = len(again.transcript.agent_frames)
        await again.conn.load_session(cwd=str(workspace), session_id=sid)
        replay = updates_before_response(again, start, last_request_id(again, "session/load"))
    replayed = [p["update"] for p in replay]

    journal = check_journal(state_dir, sid, workspace)
    results = {r["callId"]: r for r in journal.of_type("tool/result")}
    assert list(results) == list(CALLS), "every call of the batch has one result, in call order"
    for call_id in reported:
        result = results[call_id]
        assert not result["isError"], f"{call_id} was reported completed, then journaled {result}"
        assert INTERRUPTED_TOOL_TEXT not in result_text(result), call_id
    assert set(reported) <= set(completed_calls(replayed)), "the replay reports them completed"
    assert journal.end_reasons() == ["interrupted"]
    cli = journal_check_cli(state_dir, sid)
    assert cli.returncode == 0, cli.stdout + cli.stderr
