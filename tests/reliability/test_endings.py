"""reliability.md scenarios 9 and 10, in the states ``tests/integration/test_process.py`` leaves out.

That module holds the plain cases: stderr undrained with debug logging during a turn, stdin EOF
mid-turn (also while a tool waits for the client), SIGTERM / SIGINT mid-turn with a queued
prompt, a second signal, SIGTERM with a client that stopped reading, and EPIPE mid-turn. Here:

- SIGTERM while a tool waits for the client, with stderr full and never read (debug logs on);
- stdin EOF with a prompt queued behind a running turn and context staged in it;
- EPIPE while a tool batch waits for the client, with context staged in the turn;
- SIGTERM while a ``prompt_submit`` hook command runs: no hook process outlives the server.

Each ends with the journal checked (format and invariant) and every acknowledged injection in it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    initialize,
    is_turn_update,
    line,
    new_session,
    prompt,
    read_call,
    request,
    serve_command,
    write_script,
)
from tests.integration.test_process import PipedAgent, answer
from tests.reliability.support import Tally, check_injections
from tests.support.acp_schema import JsonObject
from tests.support.recording import RawAgent

pytestmark = [pytest.mark.subprocess, pytest.mark.reliability]

SID = "endings"
FS_CLIENT = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}


def inject(request_id: int, text: str) -> JsonObject:
    return request(request_id, "_acp_agent/inject", {"sessionId": SID, "content": text})


def is_fs_read(frame: JsonObject) -> bool:
    return frame.get("method") == "fs/read_text_file"


def pid_gone(pid: int) -> bool:
    """The process no longer exists (or is a zombie nobody reaped yet)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


def test_sigterm_while_a_tool_waits_for_the_client_and_stderr_is_full(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl", {"text": "reading", "toolCalls": [read_call("c1", "a.txt")]}
    )
    agent = PipedAgent(serve_command(script, "--log-level", "debug"), agent_env, subprocess.PIPE)
    assert agent.proc.stderr is not None
    try:
        noise = b'{"jsonrpc":"2.0","method":"_noise/ignored","params":{"n":1}}\n' * 20_000
        agent.send(request(1, "initialize", FS_CLIENT), noise, new_session(2, workspace, SID))
        agent.read_until(answer(2), within=20)
        agent.send(prompt(3, SID, "read it"))
        agent.read_until(is_fs_read)  # never answered: the tool waits for the client
        agent.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        final = agent.read_until(answer(3), within=10)
        code = agent.wait(10)
        elapsed = time.monotonic() - signalled
    finally:
        agent.kill()
        agent.proc.stderr.close()
    assert final["result"] == {"stopReason": "cancelled"}, final
    assert code == 0
    assert elapsed < 3.0, f"exited {elapsed:.2f}s after SIGTERM"
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["cancelled"]
    assert [r["isError"] for r in journal.of_type("tool/result")] == [True]


async def test_stdin_eof_with_a_queued_prompt_and_staged_context(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {"chunks": [f"one {i} " for i in range(8)], "delayMs": 40},
        {"toolCalls": [read_call("c1", "a.txt")]},
        {"text": "two done"},
    )
    (workspace / "a.txt").write_text("alpha\n", encoding="utf-8")
    async with RawAgent(serve_command(script), env=agent_env, timeout=20) as agent:
        await agent.send(initialize(1))
        await agent.send(new_session(2, workspace, SID))
        await agent.send(prompt(3, SID, "first"))
        while not is_turn_update(await agent.recv(), SID):
            pass
        await agent.send(inject(4, "staged while the first turn streams"))
        await agent.send(prompt(5, SID, "second, queued"))
        await agent.send(inject(6, "also staged"))
        await agent.close_stdin()
        frames: list[JsonObject] = []
        while not any(map(answer(5), frames)):
            frames.append(await agent.recv())
        assert await agent.wait_exit() == 0
    answers = {f["id"]: f["result"] for f in frames if "method" not in f}
    assert answers[3] == answers[5] == {"stopReason": "end_turn"}, answers
    assert [f["id"] for f in frames if "method" not in f and f["id"] in (3, 5)] == [3, 5]
    acknowledged = {answers[i]["messageId"]: answers[i]["placement"] for i in (4, 6)}
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["completed", "completed"]
    check_injections(journal.events, acknowledged, Tally())


def test_epipe_while_a_tool_batch_waits_keeps_the_staged_context(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    batch = {"toolCalls": [read_call("c1", "a.txt"), read_call("c2", "b.txt")]}
    script = write_script(tmp_path / "script.jsonl", batch, {"text": "unused"})
    with (tmp_path / "stderr.log").open("wb") as stderr:
        agent = PipedAgent(serve_command(script), agent_env, stderr)
    try:
        agent.send(request(1, "initialize", FS_CLIENT), new_session(2, workspace, SID))
        agent.send(prompt(3, SID, "read two"))
        read = agent.read_until(is_fs_read)
        agent.send(inject(4, "context staged in the batch"))
        staged = agent.read_until(answer(4))
        assert staged["result"]["placement"] == "staged", staged
        agent.stdout.close()  # the client goes away: the next write gets EPIPE
        agent.send(line({"jsonrpc": "2.0", "id": read["id"], "result": {"content": "alpha"}}))
        code = agent.wait(10)
    finally:
        agent.kill()
    log = (tmp_path / "stderr.log").read_text()
    assert code == 0, log[-2000:]
    assert "Traceback" not in log, log[-4000:]
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["cancelled"]
    check_injections(journal.events, {staged["result"]["messageId"]: "staged"}, Tally())


HOOK = """
import os, sys, time
sys.stdin.read()
with open(sys.argv[1], "w") as out:
    out.write(str(os.getpid()))
time.sleep(60)
"""


def test_sigterm_while_a_prompt_hook_runs_leaves_no_hook_behind(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    hook = tmp_path / "slow_hook.py"
    hook.write_text(HOOK, encoding="utf-8")
    pid_file = tmp_path / "hook.pid"
    config = tmp_path / "config.toml"
    command = json.dumps([sys.executable, str(hook), str(pid_file)])
    config.write_text(f"[[hooks.prompt_submit]]\ncommand = {command}\ntimeout_ms = 60000\n")
    script = write_script(tmp_path / "script.jsonl", {"text": "never asked"})
    with (tmp_path / "stderr.log").open("wb") as stderr:
        agent = PipedAgent(serve_command(script, "--config", str(config)), agent_env, stderr)
    try:
        agent.send(initialize(1), new_session(2, workspace, SID), prompt(3, SID, "hi"))
        agent.read_until(answer(2))
        deadline = time.monotonic() + 10
        while not pid_file.exists() or not pid_file.read_text():
            assert time.monotonic() < deadline, "the hook never started"
            time.sleep(0.01)
        hook_pid = int(pid_file.read_text())
        agent.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        final = agent.read_until(answer(3), within=10)
        code = agent.wait(10)
        elapsed = time.monotonic() - signalled
        time.sleep(0.2)
        survived = not pid_gone(hook_pid)
    finally:
        agent.kill()
        if pid_file.exists() and pid_file.read_text():
            hook_pid = int(pid_file.read_text())
            if not pid_gone(hook_pid):
                os.kill(hook_pid, signal.SIGKILL)
    assert not survived, f"the prompt hook (pid {hook_pid}) outlived the server"
    assert code == 0 and elapsed < 3.0, (code, elapsed)
    assert final["result"]["stopReason"] == "cancelled", final
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == [], "a turn opened although admission never finished"
