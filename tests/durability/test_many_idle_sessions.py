"""Far more idle sessions than descriptors, over the real wire (issue 16 point 5).

Each idle session used to hold two descriptors (its journal and its lock), so an agent under the
common ``RLIMIT_NOFILE`` soft limit of 1,024 refused ``session/new`` near 500 sessions. Now an
idle journal's descriptor is closed when room is needed (``journal/descriptors.py``, at most a
quarter of the limit stay open) and every lock of a state dir is a byte of one shared file
(``journal/lock.py``). The agents here run under a 1,024 limit, set before ``exec`` like a
``preexec_fn``; the 10,000-session run is ``test_ten_thousand_sessions.py`` (the Python API,
in a subprocess).

What must still hold (``docs/journal.md``, "Sessions per process"): the oldest sessions, whose
descriptors were closed long ago, prompt and reload with their history intact; a second process
is refused with ``journal_locked`` and the holder's pid; kill -9 frees every lock at once, and
reopening still repairs what the crash left (an open turn closed as interrupted, a torn tail
moved aside).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from tests.integration.support import check_journal, serve_command, write_script
from tests.support.descriptors import FD_LIMIT, limited, open_fds
from tests.support.durability import (
    initialize,
    journal_file,
    killable_agent,
    side_files,
    sigkill,
    until,
)
from tests.support.recording import RecordedAgent, recorded_agent

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(240)]

COUNT = 1_200
"""More than the limit itself: with two descriptors a session, about 500 fitted."""
OPEN_MAX = FD_LIMIT // 4 + 64
"""Descriptors the agent may hold with every session idle: the journal cache (a quarter of the
limit, ``descriptors.default_capacity``), one lock file, and the process's own (stdio, the
event loop, the thread pool's pipes) with room to spare."""
BATCH = 100


def sid(index: int) -> str:
    return f"idle-{index:05d}"


async def create_all(agent: RecordedAgent, workspace: Path) -> None:
    for start in range(0, COUNT, BATCH):
        await asyncio.gather(
            *(
                agent.conn.new_session(
                    cwd=str(workspace), mcp_servers=[], acp_agent={"sessionId": sid(index)}
                )
                for index in range(start, min(start + BATCH, COUNT))
            )
        )


async def load_refused(agent: RecordedAgent, workspace: Path, session_id: str) -> dict[str, Any]:
    with pytest.raises(RequestError) as refused:
        await agent.conn.load_session(cwd=str(workspace), session_id=session_id)
    assert refused.value.code == -32603, refused.value
    return dict(refused.value.data or {})


def replayed_text(agent: RecordedAgent, session_id: str, kind: str) -> str:
    return "".join(
        update["content"]["text"]
        for update in agent.transcript.session_updates(session_id)
        if update["sessionUpdate"] == kind and update["content"]["type"] == "text"
    )


def journal_types(state_dir: Path, session_id: str) -> list[str]:
    lines = journal_file(state_dir, session_id).read_bytes().splitlines()
    return [json.loads(line)["type"] for line in lines[1:]]


async def test_far_more_idle_sessions_than_descriptors_prompt_lock_and_survive_kill9(
    tmp_path: Path, workspace: Path, shm_state: Path
) -> None:
    env = {"ACP_AGENT_STATE_DIR": str(shm_state)}
    script = write_script(
        tmp_path / "first.jsonl",
        *({"text": f"answer {n}"} for n in range(3)),
        {"text": "half an answer", "hang": True},
    )
    oldest = [sid(0), sid(1), sid(2)]
    cut, torn = sid(3), sid(COUNT // 2)
    async with killable_agent(
        command=limited(serve_command(script)), env=env, validate=False, expect_exit_code=None
    ) as first:
        await initialize(first)
        await create_all(first, workspace)
        assert open_fds(first.process.pid) < OPEN_MAX
        for n, session_id in enumerate(oldest):  # their journals were closed 1,000 sessions ago
            response = await first.prompt_text(session_id, f"question {n}")
            assert response.stop_reason == "end_turn"
            assert replayed_text(first, session_id, "agent_message_chunk") == f"answer {n}"
        hanging = asyncio.create_task(first.prompt_text(cut, "never answered"))
        await until(lambda: "turn/start" in journal_types(shm_state, cut), "the cut turn")
        assert open_fds(first.process.pid) < OPEN_MAX

        second_script = write_script(tmp_path / "second.jsonl", {"text": "never"})
        async with recorded_agent(command=limited(serve_command(second_script)), env=env) as second:
            await initialize(second)
            for session_id in (oldest[0], torn):  # prompted once / idle since its creation
                data = await load_refused(second, workspace, session_id)
                assert data == {
                    "reason": "journal_locked",
                    "sessionId": session_id,
                    "holderPid": first.process.pid,
                }, data
        await sigkill(first)
        hanging.cancel()
        await asyncio.gather(hanging, return_exceptions=True)

    # what a crash mid-append leaves: a torn last line in a session nobody had touched
    torn_bytes = b'{"seq":1,"time":1,"type":"user/mess'
    with journal_file(shm_state, torn).open("ab") as file:
        file.write(torn_bytes)

    third_script = write_script(tmp_path / "third.jsonl", {"text": "after the kill"})
    async with recorded_agent(command=limited(serve_command(third_script)), env=env) as third:
        await initialize(third)
        for index in range(COUNT):  # kill -9 left no stale lock: every session loads
            await third.conn.load_session(cwd=str(workspace), session_id=sid(index))
        assert open_fds(third.process.pid) < OPEN_MAX
        for n, session_id in enumerate(oldest):
            assert replayed_text(third, session_id, "user_message_chunk") == f"question {n}"
            assert replayed_text(third, session_id, "agent_message_chunk") == f"answer {n}"
        response = await third.prompt_text(oldest[0], "one more")
        assert response.stop_reason == "end_turn"

    for session_id in oldest:
        check_journal(shm_state, session_id, workspace)
    assert journal_types(shm_state, oldest[0]).count("turn/end") == 2
    # opening still runs crash recovery (journal/recovery.py, opening.py's tail repair)
    assert journal_types(shm_state, cut)[-1] == "turn/end"
    assert b'"interrupted"' in journal_file(shm_state, cut).read_bytes().splitlines()[-1]
    assert side_files(journal_file(shm_state, torn).parent) == [torn_bytes]
    check_journal(shm_state, torn, workspace)
