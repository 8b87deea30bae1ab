"""The agent as a process: stdout hygiene, the three endings, and stderr that nobody reads.

``docs/contract.md`` §1 and ``reliability.md``: stdout carries frames only; stdin EOF lets the work
already received finish and exits 0; SIGTERM cancels running turns, answers their prompts
``cancelled`` and exits 0 within 3 s, and a second signal exits at once; a client that closes our
stdout (EPIPE) ends the process cleanly; a stderr pipe nobody drains never blocks the agent.

Tests that must stop reading the agent's stdout, or leave its stderr undrained, use
``PipedAgent`` (plain ``subprocess.Popen``, reads only when asked); the others use ``RawAgent``.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import os
import select
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest

from tests.integration.support import (
    cancel,
    check_journal,
    initialize,
    is_turn_update,
    is_update,
    line,
    new_session,
    prompt,
    read_call,
    request,
    serve_command,
    write_script,
)
from tests.support import noisy_agent
from tests.support.acp_schema import JsonObject
from tests.support.recording import (
    RawAgent,
    Transcript,
    child_env,
    decode_agent_line,
    recorded_agent,
)

pytestmark = pytest.mark.subprocess

SID = "proc"


class PipedAgent:
    """The agent under ``subprocess.Popen``: stdin and stdout pipes, read only on demand."""

    def __init__(self, command: list[str], env: dict[str, str], stderr: int | IO[bytes]) -> None:
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=child_env(env),
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self.transcript = Transcript()
        self._lines: list[bytes] = []

    def send(self, *frames: JsonObject | bytes) -> None:
        for frame in frames:
            data = frame if isinstance(frame, bytes) else line(frame)
            if not isinstance(frame, bytes):
                self.transcript.record_client_message(frame)
            self.stdin.write(data)
        self.stdin.flush()

    def read_until(self, done: Callable[[JsonObject], bool], within: float = 10.0) -> JsonObject:
        """Read frames until one satisfies ``done``; return it (all are in ``transcript``)."""
        deadline = time.monotonic() + within
        fd = self.stdout.fileno()
        while True:
            while self._lines:
                frame = decode_agent_line(self._lines.pop(0))
                if done(frame):
                    return frame
            left = deadline - time.monotonic()
            ready, _, _ = select.select([fd], [], [], max(left, 0))
            if not ready:
                raise AssertionError(f"no matching frame from the agent within {within}s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise AssertionError("the agent closed its stdout")
            self._lines += self.transcript.feed_agent_output(chunk)

    def wait(self, within: float) -> int:
        try:
            return self.proc.wait(within)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the agent was still running after {within}s") from None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.stdin, self.stdout):
            with contextlib.suppress(OSError):
                stream.close()


def answer(request_id: int) -> Callable[[JsonObject], bool]:
    return lambda frame: "method" not in frame and frame.get("id") == request_id


def first_update(frame: JsonObject) -> bool:
    return is_turn_update(frame, SID)


async def next_frame(agent: RawAgent) -> JsonObject:
    """The next frame, skipping updates that are not about the turn (a session title...)."""
    while True:
        frame = await agent.recv()
        if not is_update(frame) or is_turn_update(frame):
            return frame


def vm_kib(pid: int, field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of a process, in KiB (Linux)."""
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith(field + ":"):
            return int(text.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def handshake(workspace: Path) -> list[JsonObject]:
    return [initialize(1), new_session(2, workspace, SID)]


# --- stdout carries frames only --------------------------------------------------------------


async def test_stray_output_of_a_tool_never_reaches_stdout(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("content\n", encoding="utf-8")
    script = write_script(
        tmp_path / "script.jsonl",
        {"toolCalls": [read_call("c1", "a.txt"), read_call("c2", "a.txt")]},
        {"text": "done"},
    )
    command = noisy_agent.command("--model", f"script:{script}")
    async with recorded_agent(command=command, env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "read twice")).stop_reason == "end_turn"
    # recorded_agent validated that every stdout line is a valid frame; make sure the junk ran.
    wire = b"".join(agent.transcript.agent_lines)
    for marker in noisy_agent.MARKERS:
        assert agent.stderr.count(marker.encode()) == 2, f"{marker} not on stderr"
        assert marker.encode() not in wire
    check_journal(state_dir, sid, workspace)


# --- stdin EOF ----------------------------------------------------------------------------------


async def test_stdin_eof_mid_turn_lets_the_turn_finish(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    chunks = [f"part {i} " for i in range(6)]
    script = write_script(tmp_path / "script.jsonl", {"chunks": chunks, "delayMs": 60})
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        for frame in handshake(workspace):
            await agent.send(frame)
        await next_frame(agent), await next_frame(agent)
        await agent.send(prompt(3, SID, "long answer"))
        first = await next_frame(agent)
        assert is_turn_update(first, SID), first
        await agent.close_stdin()
        rest = [await next_frame(agent) for _ in range(len(chunks))]
        assert rest[-1] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}
        assert await agent.wait_exit() == 0
    texts = [f["params"]["update"]["content"]["text"] for f in [first, *rest[:-1]]]
    assert texts == chunks
    # docs/contract.md §1: logs on stderr are structured JSON lines, nothing else.
    for text in agent.stderr.decode().splitlines():
        assert isinstance(json.loads(text).get("event"), str), text
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["completed"]
    (message,) = journal.of_type("assistant/message")
    assert message["content"] == [{"type": "text", "text": "".join(chunks)}]


async def test_stdin_eof_while_a_tool_waits_for_the_client(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """No answer to ``fs/read_text_file`` can come after EOF: the tool fails, the turn goes on."""
    script = write_script(
        tmp_path / "script.jsonl", {"toolCalls": [read_call("c1", "a.txt")]}, {"text": "fin"}
    )
    fs_client = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        await agent.send(request(1, "initialize", fs_client))
        await agent.send(new_session(2, workspace, SID))
        await next_frame(agent), await next_frame(agent)
        await agent.send(prompt(3, SID, "read it"))
        frames = [await next_frame(agent) for _ in range(3)]
        assert frames[-1]["method"] == "fs/read_text_file", frames
        await agent.close_stdin()
        rest = [await next_frame(agent) for _ in range(3)]
        assert await agent.wait_exit() == 0
    kinds = [
        (f["params"]["update"]["sessionUpdate"], f["params"]["update"].get("status"))
        for f in rest[:2]
    ]
    assert kinds == [("tool_call_update", "failed"), ("agent_message_chunk", None)]
    assert rest[2] == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["completed"]
    assert [r["isError"] for r in journal.of_type("tool/result")] == [True]


# --- signals ------------------------------------------------------------------------------------


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_mid_turn_cancels_answers_and_exits_0(
    tmp_path: Path,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
    signum: signal.Signals,
) -> None:
    hang = {"chunks": ["thinking..."], "hang": True}
    script = write_script(tmp_path / "script.jsonl", hang, hang)
    other = "proc-2"
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        for frame in handshake(workspace):
            await agent.send(frame)
        await next_frame(agent), await next_frame(agent)
        await agent.send(prompt(3, SID, "hang"))
        assert is_turn_update(await next_frame(agent), SID)
        await agent.send(new_session(4, workspace, other))
        assert (await next_frame(agent))["result"]["sessionId"] == other
        await agent.send(prompt(5, other, "hang too"))
        assert is_turn_update(await next_frame(agent), other)
        await agent.send(prompt(6, SID, "queued behind the hang"))
        await asyncio.sleep(0.2)
        agent.process.send_signal(signum)
        signalled = time.monotonic()
        frames = [await next_frame(agent) for _ in range(3)]
        assert await agent.wait_exit(5) == 0
        elapsed = time.monotonic() - signalled
    print(f"{signum.name} mid-turn: exit after {elapsed * 1000:.0f} ms")
    assert sorted(frames, key=lambda f: f["id"]) == [
        {"jsonrpc": "2.0", "id": n, "result": {"stopReason": "cancelled"}} for n in (3, 5, 6)
    ], frames
    assert elapsed < 3.0, f"exited {elapsed:.2f}s after {signum.name}"
    assert check_journal(state_dir, SID, workspace).end_reasons() == ["cancelled"]
    assert check_journal(state_dir, other, workspace).end_reasons() == ["cancelled"]


def stalled_client(tmp_path: Path, workspace: Path, agent_env: dict[str, str]) -> PipedAgent:
    """An agent streaming to a client that read the first update and then stopped reading.

    3000 chunks: more frames than the agent's outgoing queue holds, so the turn is stuck.
    """
    big = ["x" * 2048 for _ in range(3000)]
    script = write_script(tmp_path / "script.jsonl", {"chunks": big}, {"text": "unused"})
    stderr = (tmp_path / "stderr.log").open("wb")
    agent = PipedAgent(serve_command(script), agent_env, stderr)
    stderr.close()
    agent.send(*handshake(workspace), prompt(3, SID, "flood"))
    agent.read_until(first_update)
    time.sleep(0.3)  # the pipe and the agent's queue fill up
    return agent


def test_sigterm_with_a_client_that_stopped_reading_still_exits_0_within_3s(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    agent = stalled_client(tmp_path, workspace, agent_env)
    try:
        assert agent.proc.poll() is None
        agent.proc.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        code = agent.wait(10)
        elapsed = time.monotonic() - signalled
    finally:
        agent.kill()
    print(f"SIGTERM, stalled client: exit {code} after {elapsed * 1000:.0f} ms")
    log = (tmp_path / "stderr.log").read_text()
    assert code == 0, log[-2000:]
    assert "Traceback" not in log, log[-4000:]
    assert elapsed < 3.0, f"exited {elapsed:.2f}s after SIGTERM"
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["cancelled"]


def test_a_second_sigterm_exits_at_once(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    agent = stalled_client(tmp_path, workspace, agent_env)
    try:
        agent.proc.send_signal(signal.SIGTERM)
        time.sleep(0.3)
        assert agent.proc.poll() is None, "the first SIGTERM alone already ended the agent"
        agent.proc.send_signal(signal.SIGTERM)
        second = time.monotonic()
        code = agent.wait(10)
        elapsed = time.monotonic() - second
    finally:
        agent.kill()
    print(f"second SIGTERM: exit {code} after {elapsed * 1000:.0f} ms")
    assert code != 0, "the graceful path ended the agent, not the second signal"
    assert elapsed < 1.0, f"exited {elapsed:.2f}s after the second SIGTERM"


# --- the client goes away -----------------------------------------------------------------------


def test_client_closing_our_stdout_mid_turn_ends_the_process_cleanly(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    chunks = [f"chunk {i} " for i in range(100)]
    script = write_script(tmp_path / "script.jsonl", {"chunks": chunks, "delayMs": 20})
    with (tmp_path / "stderr.log").open("wb") as stderr:
        agent = PipedAgent(serve_command(script, "--log-level", "debug"), agent_env, stderr)
    try:
        agent.send(*handshake(workspace), prompt(3, SID, "stream"))
        agent.read_until(first_update)
        agent.stdout.close()  # the next write of the agent gets EPIPE
        code = agent.wait(10)
    finally:
        agent.kill()
    agent.transcript.validate()
    log = (tmp_path / "stderr.log").read_bytes()
    assert code == 0, log.decode(errors="replace")[-2000:]
    assert b"Traceback" not in log, log.decode(errors="replace")[-4000:]
    assert len(log) < 64 * 1024, f"{len(log)} bytes of stderr for one broken pipe"
    journal = check_journal(state_dir, SID, workspace)
    assert journal.end_reasons() == ["cancelled"]


def test_a_client_that_pauses_reading_then_cancels(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """reliability.md scenario 8: memory bounded, cancel honoured, updates before the answer."""
    chunks = ["y" * 4096 for _ in range(20_000)]  # ~80 MiB of updates if nothing held them back
    # The first turn makes the agent load the (80 MiB) script, before the baseline is taken.
    script = write_script(tmp_path / "script.jsonl", {"text": "warm"}, {"chunks": chunks})
    with (tmp_path / "stderr.log").open("wb") as stderr:
        agent = PipedAgent(serve_command(script), agent_env, stderr)
    try:
        agent.send(*handshake(workspace), prompt(3, SID, "warm up"))
        agent.read_until(answer(3))
        baseline = vm_kib(agent.proc.pid, "VmRSS")
        agent.send(prompt(4, SID, "flood"))
        agent.read_until(first_update)
        time.sleep(2.0)  # the client stops reading; the agent must hold back, not buffer
        paused = vm_kib(agent.proc.pid, "VmRSS")
        agent.send(cancel(SID))  # stdin is read independently of the stalled stdout
        final = agent.read_until(answer(4), within=20)
        agent.stdin.close()
        assert agent.wait(10) == 0
    finally:
        agent.kill()
    assert final["result"] == {"stopReason": "cancelled"}
    frames = agent.transcript.agent_frames
    answered = next(i for i, f in enumerate(frames) if answer(4)(f))
    assert not [f for f in frames[answered + 1 :] if is_turn_update(f, SID)]
    warmed = next(i for i, f in enumerate(frames) if answer(3)(f))
    streamed = sum(1 for f in frames[warmed + 1 : answered] if is_turn_update(f, SID))
    print(f"paused client: {streamed} of {len(chunks)} chunks sent; RSS {baseline} -> {paused} KiB")
    assert 0 < streamed < len(chunks), "the cancel did not stop the stream"
    assert paused - baseline < 32 * 1024, f"RSS grew by {(paused - baseline) // 1024} MiB"
    agent.transcript.validate()
    assert check_journal(state_dir, SID, workspace).end_reasons() == ["completed", "cancelled"]


def test_stderr_that_nobody_reads_never_blocks_the_agent(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    chunks = [f"c{i} " for i in range(200)]
    script = write_script(tmp_path / "script.jsonl", {"chunks": chunks})
    command = serve_command(script, "--log-level", "debug")
    agent = PipedAgent(command, agent_env, subprocess.PIPE)
    assert agent.proc.stderr is not None
    try:
        # Unknown notifications: no answer on stdout, one debug log line each on stderr.
        noise = b'{"jsonrpc":"2.0","method":"_noise/ignored","params":{"n":1}}\n' * 20_000
        agent.send(noise, *handshake(workspace), prompt(3, SID, "two hundred chunks"))
        result = agent.read_until(answer(3), within=20)
        assert result["result"] == {"stopReason": "end_turn"}
        agent.stdin.close()
        assert agent.wait(10) == 0
        capacity = fcntl.fcntl(agent.proc.stderr.fileno(), fcntl.F_GETPIPE_SZ)
        backlog = agent.proc.stderr.read()
    finally:
        agent.kill()
        agent.proc.stderr.close()
    # Full up to the last log line that did not fit (writes up to 4 KiB are atomic).
    assert len(backlog) > capacity - 4096, "stderr never filled up: the test proves nothing"
    texts = [
        f["params"]["update"]["content"]["text"]
        for f in agent.transcript.agent_frames
        if is_turn_update(f, SID)
        and f["params"]["update"]["sessionUpdate"] == "agent_message_chunk"
    ]
    assert texts == chunks
    agent.transcript.validate()
    check_journal(state_dir, SID, workspace)


# --- start-up -----------------------------------------------------------------------------------


async def test_initialize_answers_without_delay(agent_env: dict[str, str]) -> None:
    started = time.monotonic()
    async with RawAgent(env=agent_env) as agent:
        spawned = time.monotonic()
        response = await agent.request("initialize", {"protocolVersion": 1})
        answered = time.monotonic()
        assert response["result"]["protocolVersion"] == 1
    print(
        f"initialize: {1000 * (answered - spawned):.0f} ms after spawn returned, "
        f"{1000 * (answered - started):.0f} ms including process start"
    )
