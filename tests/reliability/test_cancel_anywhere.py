"""reliability.md scenario 11: cancel at random points of a turn with tool batches and injections.

One agent process, one session, many turns (``scaled``). Each turn runs random script answers
(streamed chunks, tool batches through a client that answers ``fs/read_text_file`` after a
random pause, sometimes a missing file), while the client injects context at random moments;
the cancel lands at once, after a random delay, after a random number of updates, or as a tool
call starts. After every turn, ``_acp_agent/when_idle`` and then the checks of
``tests/reliability/support.py`` hold: the invariant, the answer against the journal, each
acknowledged injection exactly once where its placement said, nothing of the turn after its
answer. At the end a new process loads the session and ``acp-agent journal check`` passes.
"""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

import pytest

from tests.integration.support import check_journal, serve_command, write_script
from tests.reliability.support import (
    CANCEL_POINTS,
    SEED,
    SlowClient,
    Tally,
    cancel_point,
    check_injections,
    check_turns,
    check_updates_before_answer,
    inject_after,
    make_files,
    prompt_ids,
    prompt_sent,
    random_script,
    scaled,
)
from tests.support.durability import initialize, journal_check_cli, when_idle
from tests.support.recording import recorded_agent

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

TURNS = scaled(14, 100)


@pytest.mark.timeout(60 + TURNS * 2)
async def test_cancel_at_random_points_keeps_every_promise(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    rng = random.Random(SEED)
    make_files(workspace)
    script = write_script(tmp_path / "script.jsonl", *random_script(rng, TURNS * 6 + 40))
    tally = Tally()
    acknowledged: dict[str, str] = {}
    started = time.monotonic()
    async with recorded_agent(SlowClient(rng), serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        for turn in range(TURNS):
            before = len(check_journal(state_dir, sid, workspace).events)
            first_line = len(agent.transcript.agent_lines)
            sent = len(agent.transcript.client_messages)
            running = asyncio.create_task(agent.prompt_text(sid, f"turn {turn}"))
            injections = [
                asyncio.create_task(
                    inject_after(agent, sid, rng.uniform(0, 0.2), f"ctx {turn}.{k}")
                )
                for k in range(rng.choice([0, 0, 1, 1, 2, 3]))
            ]
            how = rng.choice(CANCEL_POINTS)
            await prompt_sent(agent, sent)
            await cancel_point(agent, rng, how)
            await agent.conn.cancel(session_id=sid)
            answer = (await asyncio.wait_for(running, 15)).stop_reason
            if how == "at once":  # right behind the prompt on the wire: nothing can finish first
                assert answer == "cancelled", f"turn {turn}: a cancel right behind its prompt"
            tally.answers[answer] += 1
            for injected in await asyncio.gather(*injections):
                acknowledged[injected["messageId"]] = injected["placement"]
            health = await when_idle(agent, sid)
            assert health["journal"] == {"healthy": True, "unflushed": 0, "lastError": None}
            journal = check_journal(state_dir, sid, workspace)
            check_turns(journal.events[before:], [answer], tally)
            (request_id,) = prompt_ids(agent, sent)
            last_line = len(agent.transcript.agent_lines)
            check_updates_before_answer(agent, sid, first_line, last_line, request_id)
    journal = check_journal(state_dir, sid, workspace)
    check_injections(journal.events, acknowledged, tally)
    print(tally.line(f"cancel anywhere, {TURNS} turns", time.monotonic() - started))
    assert tally.answers["cancelled"] >= TURNS // 3, "too few cancels landed inside a turn"

    async with recorded_agent(env=agent_env) as agent:
        await initialize(agent)
        await agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
    assert journal_check_cli(state_dir, sid).returncode == 0
    assert check_journal(state_dir, sid, workspace).events == journal.events
