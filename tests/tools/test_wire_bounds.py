"""Issue 14 against the real agent process: a 30 MB file read in bounded frames, and a command
whose detached child holds the output open reported by its exit status, not as a timeout.

A ``read_file`` of a 30 MB file used to be one 31 MB result: one ``session/update`` frame, one
journal line, one model request. Now every frame and journal line stays under ``FRAME_BOUND``,
locally and through the client's ``fs/read_text_file``, and the result says how to read on.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    serve_command,
    session_path,
    tool_text,
    turn_updates,
    write_script,
)
from tests.sandbox.support import unsandboxed
from tests.support.acp_schema import JsonObject
from tests.support.recording import RecordingClient, recorded_agent
from tests.support.requests import read_requests
from tests.tools.support import DETACH, kill_detached

pytestmark = pytest.mark.subprocess

FRAME_BOUND = 1 << 20
LINES = 1_500_000  # 20 bytes each: 30 MB


def script(tmp_path: Path, call: JsonObject) -> Path:
    return write_script(tmp_path / "script.jsonl", {"toolCalls": [call]}, {"text": "done"})


def finals(updates: list[JsonObject]) -> list[JsonObject]:
    return [u for u in updates if u.get("status") in ("completed", "failed")]


@pytest.mark.parametrize("through", ["disk", "client"])
async def test_a_30_mb_file_is_read_in_bounded_frames(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str], through: str
) -> None:
    line = "x" * 9
    (workspace / "big.txt").write_text(
        "".join(f"{n:09d} {line}\n" for n in range(LINES)), encoding="utf-8"
    )
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    call = {"id": "c1", "name": "read_file", "arguments": {"path": "big.txt"}}
    client = RecordingClient(advertise_fs=through == "client", real_fs=True)
    async with recorded_agent(client, serve_command(script(tmp_path, call)), env=env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "go")).stop_reason == "end_turn"
        (final,) = finals(turn_updates(agent, sid, "go"))
        biggest_frame = max(len(frame) for frame in agent.transcript.agent_lines)
    body = tool_text(final)
    assert body.endswith(
        "[… file continues: 1,498,000 more lines; call read_file with line=2001 to read on]"
    )
    assert body.startswith(f"000000000 {line}\n") and f"\n000001999 {line}\n" in body
    assert biggest_frame < FRAME_BOUND, "a session/update frame carried the whole file"
    check_journal(state_dir, sid, workspace)
    journal = session_path(state_dir, sid) / "journal.jsonl"
    assert max(len(text) for text in journal.read_bytes().split(b"\n")) < FRAME_BOUND
    assert max(len(str(request)) for request in read_requests(requests)) < FRAME_BOUND


async def test_a_command_whose_detached_child_holds_the_output_reports_its_exit(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    """``setsid -f`` starts a child in a new session that keeps the output pipe open for 30 s
    while the shell exits 0. It used to be reported "[timed out: the command was killed]" after
    the whole timeout, a kill that never happened. Unsandboxed: in the sandbox, what a command
    leaves running ends with it (its own pid namespace, ``tests/sandbox``)."""
    command = f"{DETACH}; echo started"
    call = {
        "id": "c1",
        "name": "run_command",
        "arguments": {"command": command, "timeout_ms": 10_000},
    }
    client = RecordingClient(advertise_fs=False)
    try:
        async with recorded_agent(
            client, serve_command(script(tmp_path, call), *unsandboxed(tmp_path)), env=agent_env
        ) as agent:
            sid = await agent.handshake(workspace)
            assert (await agent.prompt_text(sid, "go")).stop_reason == "end_turn"
            (final,) = finals(turn_updates(agent, sid, "go"))
    finally:
        kill_detached(workspace / "detached.pid")
    assert final["status"] == "completed"
    assert tool_text(final) == (
        f"sandbox: off\n$ {command}\nstarted\n[a process the command started is still running detached and "
        "holding its output open; output after the shell exited is not shown]\n[exit code 0]"
    )
