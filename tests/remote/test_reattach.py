"""A running turn outlives its connection (docs/contract.md §13), against the real agent on a
real WebSocket (``serve --listen ws://``, ``--detach-grace``):

- the connection dropped at random points (seeded: ``REATTACH_SEED``; 12 in ``make test``, 50
  under ``ACP_AGENT_RELIABILITY=full``, about 2 s each) of a long scripted
  turn (streamed chunks, a thought, two tool calls), a clean close or an aborted socket; a new
  connection attaches with ``session/resume`` ``afterSeq`` (what it had, plus exactly what
  followed) or ``session/load`` (everything): what it assembles equals one uninterrupted run,
  every ``seq`` it got is distinct and increasing, the attach answer says ``runningTurn`` while
  the turn runs and its end then comes as ``_acp_agent/turn_ended``. One server process serves
  them all (about four in five attach while the turn runs: 41 of 50 in one run);
- a permission request pending at the drop is asked again of the client that attaches;
- the grace's end with nobody attached cancels the turn (``turn/end`` reason ``cancelled``).

``--detach-grace 0`` keeps §10's behaviour: ``test_streamable.py``, ``test_hostile.py`` and
``test_ts_remote.py`` run with it.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import anyio
import pytest

from tests.integration.support import check_journal, wait_until, write_script
from tests.reliability.support import scaled
from tests.remote.reattach_support import (
    Collected,
    assemble,
    attach,
    long_turn,
    prompt_until,
    running,
    seq_of,
)
from tests.remote.support import listening, peer, prompt_params

pytestmark = pytest.mark.subprocess

TRIALS = scaled(12, 50)
SEED = int(os.environ.get("REATTACH_SEED", "27"))


async def fresh_session(url: str, workspace: Path) -> tuple[str, Collected]:
    async with peer(url) as client:
        await client.initialize()
        session_id = await client.new_session(workspace)
        return session_id, await prompt_until(client, session_id, None)


async def drop_at(url: str, workspace: Path, point: int, clean: bool) -> tuple[str, Collected]:
    """A session whose connection goes after ``point`` updates of its turn."""
    async with peer(url) as client:
        await client.initialize()
        session_id = await client.new_session(workspace)
        got = await prompt_until(client, session_id, point)
        if not clean:
            client.ws.transport.abort()
    return session_id, got


@pytest.mark.timeout(60 + TRIALS * 2)
async def test_reattach_at_random_points(tmp_path: Path, state_dir: Path, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("the notes\n")
    script = write_script(tmp_path / "s.jsonl", *(long_turn(0) * (TRIALS + 1)))
    rng = random.Random(SEED)
    with listening(script, state_dir, "--detach-grace", "60") as agent:
        with anyio.fail_after(20):
            _, whole = await fresh_session(agent.ws_url, workspace)
        assert whole.answer is not None and whole.answer["result"]["stopReason"] == "end_turn"
        baseline = assemble(whole.updates)
        turn_updates = [u for u in whole.updates if u["sessionUpdate"] != "usage_update"]
        assert len(turn_updates) > 40 and baseline[1] and len(baseline[0]) >= 5
        sessions, mid_turn = [], 0
        for trial in range(TRIALS):
            point = rng.randrange(1, len(turn_updates))
            by_load, clean = trial % 2 == 1, rng.random() < 0.5
            with anyio.fail_after(20):
                session_id, before = await drop_at(agent.ws_url, workspace, point, clean)
                async with peer(agent.ws_url) as client:
                    await client.initialize()
                    after = None if by_load else seq_of(before.updates[-1])
                    method = "session/load" if by_load else "session/resume"
                    got = await attach(client, method, session_id, workspace, after)
            assert "result" in got.answer, got.answer
            seen = got.updates if by_load else [*before.updates, *got.updates]
            seen = [u for u in seen if u["sessionUpdate"] != "available_commands_update"]
            numbers = [seq_of(u) for u in seen]
            where = f"trial {trial}: dropped after {point} updates, {method}"
            assert numbers == sorted(set(numbers)), f"{where}: a duplicate or out of order"
            assert assemble(seen) == baseline, where
            prompts = [u for u in got.updates if u["sessionUpdate"] == "user_message_chunk"]
            assert len(prompts) == (1 if by_load else 0), where  # the prompt, replayed once
            turn = running(got.answer)
            if turn is not None:
                mid_turn += 1
                assert got.ended == {
                    "sessionId": session_id,
                    "turn": turn["turn"],
                    "stopReason": "end_turn",
                }, where
            sessions.append(session_id)
        print(f"{mid_turn} of {TRIALS} attached while the turn ran")
        assert mid_turn >= TRIALS // 5, "the turn is too short to be attached to while it runs"
    for session_id in sessions:
        assert check_journal(state_dir, session_id, workspace).end_reasons() == ["completed"]


async def test_a_pending_permission_is_asked_again_after_reattach(
    tmp_path: Path, state_dir: Path, workspace: Path
) -> None:
    write = {"id": "w1", "name": "write_file", "arguments": {"path": "out.txt", "content": "x"}}
    script = write_script(tmp_path / "s.jsonl", {"toolCalls": [write]}, {"text": "written"})
    with listening(script, state_dir, "--detach-grace", "60") as agent:
        async with peer(agent.ws_url) as client:
            await client.initialize()
            session_id = await client.new_session(workspace)
            await client.request("session/prompt", prompt_params(session_id, "write it"))
            while (await client.receive()).get("method") != "session/request_permission":
                pass
        async with peer(agent.ws_url) as client:
            await client.initialize()
            params = {"sessionId": session_id, "cwd": str(workspace), "mcpServers": []}
            request_id = await client.request("session/resume", params)
            answer, asked = None, None
            with anyio.fail_after(15):
                while asked is None:
                    frame = await client.receive()
                    if frame.get("id") == request_id:
                        answer = frame
                    elif frame.get("method") == "session/request_permission":
                        asked = frame
            assert answer is not None and running(answer) == {"turn": 1}
            assert asked["params"]["toolCall"]["toolCallId"] == "w1"
            option = next(
                o["optionId"] for o in asked["params"]["options"] if o["kind"] == "allow_once"
            )
            result = {"outcome": {"outcome": "selected", "optionId": option}}
            await client.send({"jsonrpc": "2.0", "id": asked["id"], "result": result})
            with anyio.fail_after(15):
                while (frame := await client.receive()).get("method") != "_acp_agent/turn_ended":
                    pass
            assert frame["params"]["stopReason"] == "end_turn"
    assert (workspace / "out.txt").read_text() == "x"
    assert check_journal(state_dir, session_id, workspace).end_reasons() == ["completed"]


async def test_the_grace_ending_with_nobody_attached_cancels_the_turn(
    tmp_path: Path, state_dir: Path, workspace: Path
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"chunks": ["work"], "hang": True})
    with listening(script, state_dir, "--detach-grace", "0.5") as agent:
        async with peer(agent.ws_url) as client:
            await client.initialize()
            session_id = await client.new_session(workspace)
            await client.request("session/prompt", prompt_params(session_id, "go"))
            while (await client.receive()).get("params", {}).get("update", {}).get(
                "sessionUpdate"
            ) != "agent_message_chunk":
                pass  # the turn streams: it is running when the client leaves
        await wait_until(lambda: _ended(state_dir, session_id, workspace), "the turn's end")
        assert "detach_grace_ended" in agent.log_text()
        async with peer(agent.ws_url) as client:
            await client.initialize()
            with anyio.fail_after(15):
                got = await attach(client, "session/resume", session_id, workspace, None)
            assert running(got.answer) is None  # the turn was cancelled at the grace's end
    assert check_journal(state_dir, session_id, workspace).end_reasons() == ["cancelled"]


def _ended(state_dir: Path, session_id: str, workspace: Path) -> bool:
    try:
        return check_journal(state_dir, session_id, workspace).end_reasons() == ["cancelled"]
    except AssertionError:
        return False
