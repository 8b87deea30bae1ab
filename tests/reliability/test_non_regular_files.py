"""Scenario 13 (issue 14): named pipes, sockets and devices in the workspace, against the real
agent process.

A file tool that opened a named pipe blocked in a worker thread nothing could cancel: the turn
never ended and ``session/cancel`` was never answered. Every file tool now refuses what is not a
regular file without opening it in a blocking way, and the turn goes on. The device is a link in
the workspace to ``/dev/null`` with ``/dev`` as an additional session root (without it the link
is refused by the roots check first; ``tests/tools/special.py``).

Pass criteria, per tool and kind: the prompt is answered ``end_turn`` (if it is not within
``PROMPT_S``, a cancel is sent and must be answered within ``CANCEL_S``); the call failed with
``<tool>: <path> is a <kind>, not a regular file: refused``; the pipe was never opened blocking
(the ``Unblocker`` rescuing a stuck agent only from ``UNBLOCK_AFTER_S`` on never had to); the
file is left as it was; the journal passes the format and invariant checks.
"""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    serve_command,
    tool_text,
    turn_updates,
    write_script,
)
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordedAgent, RecordingClient, recorded_agent
from tests.tools.special import DEVICE_ROOT, KINDS, WORDS, Unblocker, make_special

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

PROMPT_S = 8.0
CANCEL_S = 4.0
UNBLOCK_AFTER_S = PROMPT_S + CANCEL_S + 1
ARGUMENTS: dict[str, JsonObject] = {
    "read_file": {},
    "write_file": {"content": "new\n"},
    "edit_file": {"old_string": "a", "new_string": "b"},
    "search": {"pattern": "a"},
}


def script(tmp_path: Path, *calls: JsonObject) -> Path:
    lines = [{"toolCalls": [call]} for call in calls]
    return write_script(tmp_path / "script.jsonl", *lines, {"text": "done"})


def finals(updates: list[JsonObject]) -> list[JsonObject]:
    return [u for u in updates if u.get("status") in ("completed", "failed")]


async def outcome(agent: RecordedAgent, sid: str) -> str:
    """The prompt's stop reason, or how it was stuck: unanswered for ``PROMPT_S`` (a cancel is
    then sent), the cancel unanswered for ``CANCEL_S`` too."""
    prompt = asyncio.ensure_future(agent.prompt_text(sid, "go"))
    done, _ = await asyncio.wait({prompt}, timeout=PROMPT_S)
    if done:
        return prompt.result().stop_reason
    await agent.conn.cancel(session_id=sid)
    done, _ = await asyncio.wait({prompt}, timeout=CANCEL_S)
    stuck = "stuck; answered once cancelled" if done else "stuck; session/cancel not answered"
    await asyncio.wait({prompt}, timeout=UNBLOCK_AFTER_S)  # the Unblocker rescues it, then ends
    return stuck


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("tool", ARGUMENTS)
async def test_file_tools_refuse_non_regular_files_and_the_turn_goes_on(
    tmp_path: Path,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
    tool: str,
    kind: str,
) -> None:
    target = workspace / "notes"
    reported = make_special(target, kind)
    call = {"id": "c1", "name": tool, "arguments": {"path": "notes", **ARGUMENTS[tool]}}
    client = RecordingClient(advertise_fs=False)
    with Unblocker(target, after=UNBLOCK_AFTER_S) as unblocker:
        async with recorded_agent(
            client, serve_command(script(tmp_path, call)), env=agent_env
        ) as agent:
            sid = await agent.handshake(workspace, additional_directories=[str(DEVICE_ROOT)])
            answer = await outcome(agent, sid)
            updates = turn_updates(agent, sid, "go") if answer == "end_turn" else []
    assert (answer, unblocker.fired) == ("end_turn", 0), f"{tool} blocked on the {kind}"
    (final,) = finals(updates)
    expected = f"{tool}: {reported} is a {WORDS[kind]}, not a regular file: refused"
    assert (final["status"], tool_text(final)) == ("failed", expected)
    assert target.is_symlink() or not stat.S_ISREG(os.lstat(target).st_mode), "left as it was"
    (result,) = check_journal(state_dir, sid, workspace).of_type("tool/result")
    assert result["isError"]


async def test_listing_and_searching_walk_past_non_regular_files(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("a match\n", encoding="utf-8")
    for kind in KINDS:
        make_special(workspace / kind, kind)
    calls = (
        {"id": "c1", "name": "list_dir", "arguments": {}},
        {"id": "c2", "name": "search", "arguments": {"pattern": "a"}},
    )
    client = RecordingClient(advertise_fs=False)
    with Unblocker(workspace / "fifo", after=UNBLOCK_AFTER_S) as unblocker:
        async with recorded_agent(
            client, serve_command(script(tmp_path, *calls)), env=agent_env
        ) as agent:
            sid = await agent.handshake(workspace, additional_directories=[str(DEVICE_ROOT)])
            answer = await outcome(agent, sid)
            updates = turn_updates(agent, sid, "go") if answer == "end_turn" else []
    assert (answer, unblocker.fired) == ("end_turn", 0)
    listed, found = (tool_text(u) for u in finals(updates))
    assert listed == "a.txt\ndevice -> /dev/null\nfifo (named pipe)\nsocket (socket)"
    assert found == "a.txt:1: a match"
    check_journal(state_dir, sid, workspace)
