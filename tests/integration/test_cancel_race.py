"""A cancel that races the natural end of a turn (SDK client, real agent, slow disk).

acp-notes.md: "A cancelled prompt is answered cancelled, never an error, never end_turn, even if
the cancel races the natural end"; ACP (prompt turn, cancellation): once the agent receives
``session/cancel`` it MUST answer the pending ``session/prompt`` with ``cancelled``. The agent
runs under ``bench/sync_counting_agent.py`` with every fsync slowed to ``SLOW_SYNC_MS``:
that holds the turn in its last journal barrier, so the cancel surely reaches the agent before
the prompt is answered.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from acp import RequestError

from bench import sync_counting_agent
from tests.integration.support import (
    check_journal,
    turn_updates_so_far,
    wait_until,
    write_script,
)
from tests.support.acp_schema import JsonObject
from tests.support.recording import recorded_agent

pytestmark = pytest.mark.subprocess


SLOW_SYNC_MS = 250


async def cancel_after_last_update(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str], line: JsonObject
) -> tuple[str | RequestError, float]:
    """Cancel as soon as the turn's last update arrives; (the answer, seconds it took after)."""
    script = write_script(tmp_path / "script.jsonl", line)
    env = {
        **agent_env,
        sync_counting_agent.ENV: str(tmp_path / "syncs.jsonl"),
        sync_counting_agent.DELAY_ENV: str(SLOW_SYNC_MS),
    }
    command = sync_counting_agent.command("--model", f"script:{script}")
    async with recorded_agent(command=command, env=env) as agent:
        sid = await agent.handshake(workspace)
        running = asyncio.create_task(agent.prompt_text(sid, "almost done"))
        await wait_until(lambda: any(turn_updates_so_far(agent, sid)), what="the update")
        await agent.conn.cancel(session_id=sid)
        cancelled_at = time.monotonic()
        try:
            answer: str | RequestError = (await running).stop_reason
        except RequestError as error:
            answer = error
        took = time.monotonic() - cancelled_at
    check_journal(state_dir, sid, workspace)
    return answer, took


async def test_a_cancel_received_during_the_last_flush_still_answers_cancelled(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    answer, took = await cancel_after_last_update(
        tmp_path, workspace, state_dir, agent_env, {"chunks": ["the last words"]}
    )
    assert answer == "cancelled", (
        f"answered {answer!r} {took * 1000:.0f} ms after the cancel was sent: the agent had "
        "received the cancel before it answered the prompt"
    )


async def test_a_cancel_received_while_a_model_error_is_flushed_answers_cancelled(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    answer, took = await cancel_after_last_update(
        tmp_path,
        workspace,
        state_dir,
        agent_env,
        {"chunks": ["partial"], "error": {"message": "provider exploded"}},
    )
    assert answer == "cancelled", (
        f"answered {answer!r} {took * 1000:.0f} ms after the cancel was sent: the agent had "
        "received the cancel before it answered the prompt"
    )
