"""The SIGTERM promise in the states ``test_process.py`` and ``test_endings.py`` leave out
(issue 14): cancel the running turns, answer them ``cancelled`` while stdout is writable, flush
every journal, exit 0 within 3 s.

- after stdin EOF, while the server lets a turn that never ends run (a static script piped in);
- while a tool's worker thread is blocked for ever (``stuck_thread_agent.py``), awaited by the
  turn (``held``: the turn cannot end) or abandoned by it (``abandoned``: the turn ends, the
  thread does not, and it is no daemon).

A held thread's turn cannot end in the journal: the process leaves it open, flushed, exactly as
a crash at that point would, and the next open closes it ``interrupted`` (``recovery.py``).
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from acp_agent.journal.invariant import check_file
from tests.integration import stuck_thread_agent
from tests.integration.support import (
    check_journal,
    initialize,
    line,
    new_session,
    prompt,
    request,
    serve_command,
    session_path,
    write_script,
)
from tests.integration.test_process import PipedAgent, answer
from tests.support.acp_schema import JsonObject
from tests.support.recording import run_agent_raw

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

SID = "every-state"


def is_chunk(frame: JsonObject) -> bool:
    return frame.get("method") == "session/update" and (
        frame["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    )


def is_tool_call(frame: JsonObject) -> bool:
    return frame.get("method") == "session/update" and (
        frame["params"]["update"]["sessionUpdate"] == "tool_call"
    )


def signalled_exit(
    agent: PipedAgent, signum: signal.Signals = signal.SIGTERM
) -> tuple[JsonObject, int, float]:
    """Signal the agent; the answer to prompt 3, the exit status, the seconds it took."""
    agent.proc.send_signal(signum)
    signalled = time.monotonic()
    final = agent.read_until(answer(3), within=5)
    code = agent.wait(5)
    return final, code, time.monotonic() - signalled


def test_sigterm_after_stdin_eof_cancels_the_turn_the_server_was_draining(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "s.jsonl", {"chunks": ["thinking..."], "hang": True})
    with (tmp_path / "stderr.log").open("wb") as stderr:
        agent = PipedAgent(serve_command(script), agent_env, stderr)
    try:
        agent.send(initialize(1), new_session(2, workspace, SID), prompt(3, SID, "hang"))
        agent.stdin.close()  # a static script: all of it, then EOF
        agent.read_until(is_chunk)
        time.sleep(0.2)  # the server is draining: it waits for the turn, as EOF asks
        assert agent.proc.poll() is None
        final, code, elapsed = signalled_exit(agent)
    finally:
        agent.kill()
    print(f"SIGTERM after EOF: exit {code} after {elapsed * 1000:.0f} ms")
    log = (tmp_path / "stderr.log").read_text()
    assert final["result"] == {"stopReason": "cancelled"}, final
    assert code == 0, log[-2000:]
    assert elapsed < 3.0, f"exited {elapsed:.2f}s after SIGTERM"
    assert check_journal(state_dir, SID, workspace).end_reasons() == ["cancelled"]


def stuck_call(how: str) -> JsonObject:
    return {"id": "c1", "name": "stuck", "arguments": {"how": how}}


@pytest.mark.parametrize("how", ["held", "abandoned"])
def test_sigterm_with_a_worker_thread_stuck_for_ever_still_exits_0_within_3s(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str], how: str
) -> None:
    mark = tmp_path / "stuck.mark"
    script = write_script(tmp_path / "s.jsonl", {"toolCalls": [stuck_call(how)]}, {"text": "x"})
    command = stuck_thread_agent.command("--model", f"script:{script}")
    env = {**agent_env, stuck_thread_agent.MARK_ENV: str(mark)}
    with (tmp_path / "stderr.log").open("wb") as stderr:
        agent = PipedAgent(command, env, stderr)
    try:
        agent.send(initialize(1), new_session(2, workspace, SID), prompt(3, SID, "get stuck"))
        agent.read_until(is_tool_call)
        deadline = time.monotonic() + 10
        while not mark.exists():
            assert time.monotonic() < deadline, "the stuck tool never ran"
            time.sleep(0.01)
        final, code, elapsed = signalled_exit(agent)
    finally:
        agent.kill()
    print(f"SIGTERM, stuck thread ({how}): exit {code} after {elapsed * 1000:.0f} ms")
    log = (tmp_path / "stderr.log").read_text()
    assert final["result"] == {"stopReason": "cancelled"}, final
    assert code == 0, log[-3000:]
    assert elapsed < 3.0, f"exited {elapsed:.2f}s after SIGTERM"
    assert "Traceback" not in log, log[-4000:]
    journal = session_path(state_dir, SID)
    assert check_file(journal, allow_open_tail=True) == []
    if how == "abandoned":  # the turn ended: the journal is complete as it is
        assert check_journal(state_dir, SID, workspace).end_reasons() == ["cancelled"]
        return
    # the turn could not end; what it did is durable, and the next open closes it
    reopened = [
        line(initialize(1)),
        line(
            request(2, "session/load", {"sessionId": SID, "cwd": str(workspace), "mcpServers": []})
        ),
    ]
    frames, stderr_bytes, status = run_agent_raw(
        reopened, ["--model", f"script:{script}"], agent_env
    )
    assert status == 0, stderr_bytes.decode(errors="replace")[-2000:]
    assert "result" in next(f for f in frames if f.get("id") == 2)
    reloaded = check_journal(state_dir, SID, workspace)
    assert reloaded.end_reasons() == ["interrupted"]
    assert [r["isError"] for r in reloaded.of_type("tool/result")] == [True]


def test_stdin_eof_does_not_wait_for_an_abandoned_thread(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    """No signal at all: after stdin EOF an abandoned thread, still blocked, holds nothing up."""
    mark = tmp_path / "stuck.mark"
    script = write_script(
        tmp_path / "s.jsonl", {"toolCalls": [stuck_call("abandoned")]}, {"text": "x"}
    )
    command = stuck_thread_agent.command("--model", f"script:{script}")
    env = {**agent_env, stuck_thread_agent.MARK_ENV: str(mark)}
    agent = PipedAgent(command, env, subprocess.DEVNULL)
    try:
        agent.send(initialize(1), new_session(2, workspace, SID), prompt(3, SID, "get stuck"))
        agent.read_until(is_tool_call)
        while not mark.exists():
            time.sleep(0.01)
        agent.send({"jsonrpc": "2.0", "method": "session/cancel", "params": {"sessionId": SID}})
        final = agent.read_until(answer(3), within=5)
        agent.stdin.close()
        ended = time.monotonic()
        code = agent.wait(5)
        elapsed = time.monotonic() - ended
    finally:
        agent.kill()
    assert final["result"] == {"stopReason": "cancelled"}, final
    assert code == 0 and elapsed < 3.0, (code, elapsed)
