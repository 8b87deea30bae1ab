"""Every client terminal is killed and released on every way out (issue 14, ACP: "the client
must release every terminal").

A command runs in the client's terminal ``t1`` (``terminal/wait_for_exit`` never answered, as for
a long build); then the agent is stopped by SIGTERM, SIGINT or stdin EOF. No answer can reach it
any more (it stopped reading), yet it still sends ``terminal/kill`` and ``terminal/release`` for
``t1`` before it exits: the client's command must not run on with nobody to read its output.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    new_session,
    prompt,
    serve_command,
    write_script,
)
from tests.integration.terminal_peer import TerminalPeer, initialize_terminal_client, run_call
from tests.support.recording import RawAgent

pytestmark = pytest.mark.subprocess

SID = "terminal-endings"


async def started(agent: RawAgent, workspace: Path) -> TerminalPeer:
    peer = TerminalPeer(agent)
    await agent.send(initialize_terminal_client(1))
    await agent.send(new_session(2, workspace, SID))
    await agent.send(prompt(3, SID, "build it"))
    await peer.until(lambda: bool(peer.held), 10, "terminal/wait_for_exit")
    return peer


def terminal_requests(peer: TerminalPeer, since: int) -> list[tuple[str, str]]:
    return [
        (f["method"], f["params"]["terminalId"])
        for _, f in peer.frames[since:]
        if f.get("method", "").startswith("terminal/") and "id" in f
    ]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_kills_and_releases_the_running_terminal(
    tmp_path: Path,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
    signum: signal.Signals,
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"toolCalls": [run_call("c1", "make")]})
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = await started(agent, workspace)
        before, peer.mute = len(peer.frames), True
        agent.process.send_signal(signum)
        signalled = time.monotonic()
        await peer.to_the_end(5)
        code = await agent.wait_exit(5)
        elapsed = time.monotonic() - signalled
    print(f"{signum.name} with a client terminal: exit {code} after {elapsed * 1000:.0f} ms")
    assert terminal_requests(peer, before) == [("terminal/kill", "t1"), ("terminal/release", "t1")]
    assert peer.answer_to(3)["result"] == {"stopReason": "cancelled"}  # type: ignore[index]
    assert code == 0 and elapsed < 3.0, (code, elapsed)
    assert check_journal(state_dir, SID, workspace).end_reasons() == ["cancelled"]


async def test_stdin_eof_kills_and_releases_the_running_terminal(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "s.jsonl", {"toolCalls": [run_call("c1", "make")]}, {"text": "it failed"}
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        peer = await started(agent, workspace)
        before, peer.mute = len(peer.frames), True
        await agent.close_stdin()
        await peer.to_the_end(5)
        code = await agent.wait_exit(5)
    assert terminal_requests(peer, before) == [("terminal/kill", "t1"), ("terminal/release", "t1")]
    # EOF lets the turn finish: the tool failed (no answer can come), the model answered
    assert peer.answer_to(3)["result"] == {"stopReason": "end_turn"}  # type: ignore[index]
    assert code == 0
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["completed"]
    assert [r["isError"] for r in journal.of_type("tool/result")] == [True]
