"""acpx (npm ``acpx``, pinned in the Makefile) drives the real agent: exec, named sessions,
cancel, and reconnecting through ``session/resume`` and through ``session/load``.

acpx prints every frame both ways with ``--format json``; ``check_stream`` validates each frame
the agent wrote against the official ACP v1 schema and checks the ordering rules. Each test runs
acpx with a private HOME and ``--ttl 1``, and ends by checking that no acpx or agent process is
left (``wait_no_lingering``). How acpx reconnects: it sends ``session/resume`` when the agent
advertises ``sessionCapabilities.resume`` and ``session/load`` otherwise (acpx 0.19.1,
``loadOrCreateRuntimeSession``); the agent always advertises resume, so the load test puts
``acp_tap.py --strip-resume`` between them, which hides that one capability and records the
agent's own frames (acpx does not print the updates a load replays).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.clients.support import (
    ACPX_VERSION,
    READ_THEN_WRITE,
    Acpx,
    Stream,
    check_stream,
    client_env,
    json_lines,
    lingering,
    read_recorded,
    script_agent,
    wait_no_lingering,
)
from tests.integration.support import check_journal, write_script
from tests.support.acp_schema import AcpSchema
from tests.support.transcript import Transcript

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(90)]


def make_acpx(agent: str, home: Path, workspace: Path, state_dir: Path) -> Acpx:
    return Acpx(agent, home, workspace, client_env(home, state_dir))


def frames_of(acpx: Acpx, *args: str, schema: AcpSchema) -> Stream:
    return check_stream(json_lines(acpx.run(*args, json_format=True).stdout), schema)


def wait_idle(home: Path) -> None:
    """acpx's queue owner (and its agent) exit ``--ttl 1`` s after the last prompt."""
    wait_no_lingering(home, within=8.0)


def test_exec_with_tools_json_frames(
    tmp_path: Path, home: Path, workspace: Path, state_dir: Path, acp_schema: AcpSchema
) -> None:
    """One-shot ``exec``: a read through ``fs/read_text_file``, a write that asks permission
    (acpx ``--approve-all``) and goes through ``fs/write_text_file``, then streamed text."""
    (workspace / "notes.txt").write_text("hello from disk\n")
    script = write_script(
        tmp_path / "script.jsonl",
        *READ_THEN_WRITE,
    )
    acpx = make_acpx(script_agent(script), home, workspace, state_dir)
    stream = frames_of(acpx, "--approve-all", "exec", "read notes", schema=acp_schema)

    assert stream.client_methods() == ["initialize", "session/new", "session/prompt"]
    (init,) = stream.results("initialize")
    assert init["protocolVersion"] == 1
    client_info = stream.frames[0].frame["params"]["clientInfo"]
    assert client_info == {"name": "acpx", "version": ACPX_VERSION}
    (new,) = stream.results("session/new")
    sid = new["sessionId"]
    agent_requests = [
        f.frame
        for f in stream.frames
        if f.direction == "agent" and "method" in f.frame and "id" in f.frame
    ]
    # The write reads the old text first (for its diff; acpx answers -32002: no such file).
    assert [r["method"] for r in agent_requests] == [
        "fs/read_text_file",
        "fs/read_text_file",
        "session/request_permission",
        "fs/write_text_file",
    ]
    assert agent_requests[0]["params"]["path"] == str(workspace / "notes.txt")
    tools = [
        (u["toolCallId"], u.get("status"))
        for u in stream.updates(sid)
        if u["sessionUpdate"] in ("tool_call", "tool_call_update")
    ]
    assert tools[-1] == ("w1", "completed") and ("r1", "completed") in tools, tools
    assert stream.agent_text(sid) == "The file says: hello from disk"
    assert stream.results("session/prompt") == [{"stopReason": "end_turn"}]
    assert (workspace / "out.txt").read_text() == "x"

    wait_no_lingering(home)
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed"]
    results = journal.of_type("tool/result")
    assert [r["callId"] for r in results] == ["r1", "w1"]
    assert not any(r["isError"] for r in results), results


def test_named_session_resume_cancel_and_text_output(
    tmp_path: Path, home: Path, workspace: Path, state_dir: Path, acp_schema: AcpSchema
) -> None:
    """``sessions new --name N``, ``prompt -s N`` (a new process: reconnects with
    ``session/resume``), a slow prompt cancelled with ``cancel -s N``, and a last prompt in text
    format, all on one session."""
    script = write_script(
        tmp_path / "script.jsonl",
        {"chunks": ["one ", "two"]},
        {"chunks": ["slow ", "answer"], "hang": True},
        {"text": "after the cancel"},
    )
    acpx = make_acpx(script_agent(script), home, workspace, state_dir)
    created = acpx.run("sessions", "new", "--name", "work")
    sid = created.stdout.strip()
    assert f"created session work ({sid})" in created.stderr
    wait_idle(home)  # the prompt below needs a fresh agent: it must reconnect
    # One agent process for the three prompts below (its script is read once, in order): with
    # --ttl 1 the queue owner could exit between two of them on a loaded machine, and a prompt
    # reaching it while it shuts down fails in acpx ("Queue owner is shutting down").
    acpx.ttl = 60

    first = frames_of(acpx, "prompt", "-s", "work", "count", schema=acp_schema)
    assert first.client_methods() == ["initialize", "session/resume", "session/prompt"]
    assert first.frames[2].frame["params"]["sessionId"] == sid
    assert not [u for u in first.updates(sid) if u["sessionUpdate"] == "user_message_chunk"], (
        "session/resume replayed history"
    )
    assert first.agent_text(sid) == "one two"
    assert first.results("session/prompt") == [{"stopReason": "end_turn"}]

    slow = acpx.start("prompt", "-s", "work", "slow please", json_format=True)
    try:
        deadline = time.monotonic() + 15
        journal_path = state_dir / "sessions" / sid / "journal.jsonl"
        while b'"turn":2' not in journal_path.read_bytes():
            assert time.monotonic() < deadline, "the slow turn never started"
            assert slow.poll() is None, slow.communicate()
            time.sleep(0.05)
        time.sleep(0.3)  # let the chunks stream; the model then hangs until cancelled
        assert slow.poll() is None, "a hanging turn ended by itself"
        cancelled = acpx.run("cancel", "-s", "work")
        assert "cancel requested" in cancelled.stdout + cancelled.stderr
        out, err = slow.communicate(timeout=15)
    finally:
        if slow.poll() is None:
            slow.kill()
            slow.communicate()
    assert slow.returncode == 0, err
    second = check_stream(json_lines(out), acp_schema, open_sessions=[sid])
    assert second.client_methods()[-2:] == ["session/prompt", "session/cancel"]
    assert second.agent_text(sid) == "slow answer"
    assert second.results("session/prompt") == [{"stopReason": "cancelled"}]

    last = acpx.run("prompt", "-s", "work", "go on")
    assert "after the cancel" in last.stdout
    acpx.run("sessions", "close", "work")
    wait_no_lingering(home)

    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed", "cancelled", "completed"]
    prompts = [m["content"][0]["text"] for m in journal.of_type("user/message")]
    assert prompts == ["count", "slow please", "go on"]


def test_reconnect_with_session_load(
    tmp_path: Path, home: Path, workspace: Path, state_dir: Path, acp_schema: AcpSchema
) -> None:
    """An agent without ``resume``: acpx reconnects with ``session/load``, and the agent
    replays the whole conversation before it answers."""
    # Each connection is a new agent process, which reads its script from the top.
    script = write_script(
        tmp_path / "script.jsonl", {"thought": "thinking", "text": "first answer"}
    )
    record = tmp_path / "recorded"
    agent = script_agent(script, tap=["--strip-resume", "--record", str(record)])
    acpx = make_acpx(agent, home, workspace, state_dir)
    sid = acpx.run("sessions", "new", "--name", "old").stdout.strip()
    wait_idle(home)
    one = frames_of(acpx, "prompt", "-s", "old", "first question", schema=acp_schema)
    assert one.client_methods() == ["initialize", "session/load", "session/prompt"]
    (init,) = one.results("initialize")
    assert "resume" not in init["agentCapabilities"]["sessionCapabilities"]
    assert init["agentCapabilities"]["loadSession"] is True
    assert one.agent_text(sid) == "first answer"
    wait_idle(home)
    write_script(script, {"text": "second answer"})
    two = frames_of(acpx, "prompt", "-s", "old", "second question", schema=acp_schema)
    assert two.client_methods() == ["initialize", "session/load", "session/prompt"]
    assert two.agent_text(sid) == "second answer", "acpx showed replayed text as new output"
    wait_no_lingering(home)

    # What the agent itself wrote on the last connection (acpx hides the replay).
    agents, clients = read_recorded(record, "agent"), read_recorded(record, "client")
    assert len(agents) == 3, sorted(agents)
    last = max(agents)
    transcript = Transcript()
    for frame in clients[last]:
        transcript.record_client_message(frame)
    for frame in agents[last]:
        transcript.feed_agent_output(_line(frame))
    transcript.validate(acp_schema)
    load_id = next(f["id"] for f in clients[last] if f.get("method") == "session/load")
    answer = next(i for i, f in enumerate(agents[last]) if f.get("id") == load_id)
    replay = [
        f["params"]["update"] for f in agents[last][:answer] if f.get("method") == "session/update"
    ]
    assert [(u["sessionUpdate"], u["content"]["text"]) for u in replay] == [
        ("user_message_chunk", "first question"),
        ("agent_thought_chunk", "thinking"),
        ("agent_message_chunk", "first answer"),
    ]
    assert replay[0]["_meta"]["acp_agent"]["source"]["kind"] == "user"
    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed", "completed"]
    assert not lingering(home)


def _line(frame: object) -> bytes:
    return json.dumps(frame, separators=(",", ":")).encode() + b"\n"
