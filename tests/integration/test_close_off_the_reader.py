"""``session/close`` waits for the client without holding up the connection (issue 14).

Closing a session whose turn runs a command in the client's terminal cancels the turn, and the
cancelled command waits for the client to answer ``terminal/kill`` / ``terminal/release``. Those
answers come in on stdin like everything else: a close that waited on the reader would hold them
(and every other session's requests) behind itself until ``CLIENT_GRACE_S`` gave up. Here the
close is answered once the client answered the release, and requests on other sessions, sent
right behind the close, are answered meanwhile. A ``session/load`` of the session being closed
waits for the close (off the reader too), then opens it again.

Also the decisions of issue 14 on the wire: a ``session/load`` with another ``cwd`` says which
one the session keeps (``_meta.acp_agent``), and a session locked by another process says who
holds it and what to do.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import (
    check_journal,
    new_session,
    prompt,
    request,
    serve_command,
    write_script,
)
from tests.integration.terminal_peer import TerminalPeer, initialize_terminal_client, run_call
from tests.support.recording import RawAgent

pytestmark = pytest.mark.subprocess

SID, OTHER = "closing", "bystander"
HOLDING = 2.0
"""How long the client holds ``terminal/release`` while it checks what else is answered: well
under the agent's ``CLIENT_GRACE_S`` (5 s), after which a blocked reader would go on anyway."""


def load(request_id: int, session_id: str, cwd: Path) -> dict[str, Any]:
    params = {"sessionId": session_id, "cwd": str(cwd), "mcpServers": []}
    return request(request_id, "session/load", params)


async def command_running(agent: RawAgent, workspace: Path) -> TerminalPeer:
    """Two sessions; ``SID``'s turn runs ``sleep 60`` in the client's terminal ``t1``."""
    peer = TerminalPeer(agent)
    await agent.send(initialize_terminal_client(1))
    await agent.send(new_session(2, workspace, SID))
    await agent.send(new_session(3, workspace, OTHER))
    await agent.send(prompt(4, SID, "run it"))
    await peer.until(lambda: bool(peer.held), 10, "terminal/wait_for_exit")
    assert [f["method"] for f in peer.held] == ["terminal/wait_for_exit"], peer.held
    return peer


def script(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [run_call("c1", "sleep 60")]},
        {"text": "reopened"},
    )


async def test_close_during_a_client_terminal_command_leaves_the_reader_free(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    async with RawAgent(serve_command(script(tmp_path)), env=agent_env) as agent:
        peer = await command_running(agent, workspace)
        await agent.send(request(10, "session/close", {"sessionId": SID}))
        sent = time.monotonic()
        await agent.send(
            request(11, "session/set_mode", {"sessionId": OTHER, "modeId": "read-only"})
        )
        await agent.send(request(12, "session/list", {}))
        await peer.until(
            lambda: peer.answer_to(11) is not None and peer.answer_to(12) is not None,
            HOLDING,
            "the requests behind the close, on another session, answered while it waits",
        )
        behind = time.monotonic() - sent
        assert peer.answer_to(10) is None, "the close did not wait for the terminal's release"
        await peer.until(
            lambda: any(f["method"] == "terminal/release" for f in peer.held), HOLDING, "release"
        )
        (release,) = [f for f in peer.held if f["method"] == "terminal/release"]
        assert release["params"] == {"sessionId": SID, "terminalId": "t1"}
        released = time.monotonic()
        assert await peer.answer_held("terminal/release") == 1
        closed = await peer.until_answered(10, 3)
        after_release = (peer.answered_at(10) or 0) - released
        cancelled = await peer.until_answered(4, 1)
    print(f"close: the others answered {behind * 1000:.0f} ms after it, ", end="")
    print(f"the close {after_release * 1000:.0f} ms after the release")
    assert closed["result"] == {}, closed
    assert after_release < 1.0, f"the close took {after_release:.2f}s after the release"
    assert cancelled["result"] == {"stopReason": "cancelled"}, cancelled
    assert peer.answer_to(11)["result"] == {}  # type: ignore[index]
    listed = peer.answer_to(12)["result"]["sessions"]  # type: ignore[index]
    assert {s["sessionId"] for s in listed} == {SID, OTHER}
    kills = [f["params"]["terminalId"] for f in peer.requests("terminal/kill")]
    assert kills == ["t1"], "the command is killed before its terminal is released"
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["cancelled"]
    assert [r["isError"] for r in journal.of_type("tool/result")] == [True]


async def test_a_load_pipelined_behind_a_close_waits_for_it_then_reopens(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    async with RawAgent(serve_command(script(tmp_path)), env=agent_env) as agent:
        peer = await command_running(agent, workspace)
        await agent.send(request(10, "session/close", {"sessionId": SID}))
        await agent.send(load(11, SID, workspace))
        await agent.send(prompt(12, SID, "to the session being closed"))
        await agent.send(request(13, "session/list", {}))
        await peer.until_answered(13, HOLDING)
        assert peer.answer_to(10) is None and peer.answer_to(11) is None
        refused = await peer.until_answered(12, 1)
        await peer.until(lambda: len(peer.held) == 2, HOLDING, "the release")
        await peer.answer_held("terminal/release")
        loaded = await peer.until_answered(11, 3)
        closed_at, loaded_at = peer.answered_at(10), peer.answered_at(11)
        await agent.send(prompt(14, SID, "again"))
        again = await peer.until_answered(14, 5)
    # a session being closed is no session for new work: the same answer as after the close
    assert refused["error"]["code"] == -32002, refused
    assert "result" in loaded and "modes" in loaded["result"], loaded
    assert closed_at is not None and loaded_at is not None and closed_at <= loaded_at
    assert again["result"]["stopReason"] == "end_turn", again
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["cancelled", "completed"]


async def test_a_load_with_another_cwd_says_which_cwd_the_session_keeps(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script_path = write_script(tmp_path / "script.jsonl")
    async with RawAgent(serve_command(script_path), env=agent_env) as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        await agent.request("session/new", new_session(0, workspace, SID)["params"])
        await agent.request("session/close", {"sessionId": SID})
        same = await agent.request(
            "session/load", {"sessionId": SID, "cwd": str(workspace), "mcpServers": []}
        )
        await agent.request("session/close", {"sessionId": SID})
        moved = await agent.request(
            "session/load", {"sessionId": SID, "cwd": str(elsewhere), "mcpServers": []}
        )
    assert "_meta" not in same["result"], same
    meta = moved["result"]["_meta"]["acp_agent"]
    assert meta["cwd"] == str(workspace) and meta["requestedCwd"] == str(elsewhere), meta
    assert str(workspace) in meta["warning"] and "session/fork" in meta["warning"], meta


async def test_a_session_locked_by_another_process_names_the_holder_and_the_way_out(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script_path = write_script(tmp_path / "script.jsonl")
    async with RawAgent(serve_command(script_path), env=agent_env) as first:
        await first.request("initialize", {"protocolVersion": 1})
        await first.request("session/new", new_session(0, workspace, SID)["params"])
        async with RawAgent(serve_command(script_path), env=agent_env) as second:
            await second.request("initialize", {"protocolVersion": 1})
            refused = await second.request(
                "session/load", {"sessionId": SID, "cwd": str(workspace), "mcpServers": []}
            )
        holder = first.process.pid
    error = refused["error"]
    assert error["code"] == -32603, error
    assert error["data"] == {"reason": "journal_locked", "sessionId": SID, "holderPid": holder}
    message = error["message"]
    assert f"pid {holder}" in message and "already open" in message, message
    assert "close it there" in message.lower() and "session/fork" in message, message
