"""A static script piped into the agent: every frame written at once, then stdin closed.

That is how ``printf '...' | acp-agent`` and CI scripts use the agent (docs/contract.md §1): on stdin EOF
it stops reading, finishes every request already received, and exits 0. The script addresses its
session by the id it requested in ``session/new`` ``_meta``. stdin and stdout may be pipes or
regular files.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.support import (
    check_journal,
    initialize,
    is_turn_update,
    is_update,
    line,
    new_session,
    prompt,
    read_call,
    serve_command,
    write_script,
)
from tests.support.acp_schema import JsonObject
from tests.support.recording import Transcript, child_env, run_agent_raw

pytestmark = pytest.mark.subprocess

SESSION = "static-1"


def script_lines(workspace: Path) -> list[bytes]:
    return [
        line(initialize(1)),
        line(new_session(2, workspace, SESSION)),
        line(prompt(3, SESSION, "what is in notes.txt?")),
        line(prompt(4, SESSION, "and now?")),
    ]


def model_script(tmp_path: Path) -> Path:
    return write_script(
        tmp_path / "script.jsonl",
        {"thought": "look first", "toolCalls": [read_call("call-1", "notes.txt")]},
        {"chunks": ["It says ", "hi."]},
        {"text": "Still hi."},
    )


def describe(frame: JsonObject) -> tuple[object, ...]:
    """A frame reduced to what the expected sequence pins down."""
    if frame.get("method") == "session/update":
        assert frame["params"]["sessionId"] == SESSION
        update = frame["params"]["update"]
        kind = update["sessionUpdate"]
        if kind.startswith("tool_call"):
            return (kind, update["toolCallId"], update.get("status", "pending"))
        return (kind, update["content"]["text"])
    if "error" in frame:
        return ("error", frame["id"], frame["error"]["code"])
    result = frame["result"]
    key = (
        "protocolVersion" if frame["id"] == 1 else "sessionId" if frame["id"] == 2 else "stopReason"
    )
    return ("result", frame["id"], result.get(key))


EXPECTED = [
    ("result", 1, 1),
    ("result", 2, SESSION),
    ("agent_thought_chunk", "look first"),
    ("tool_call", "call-1", "pending"),
    ("tool_call_update", "call-1", "in_progress"),
    ("tool_call_update", "call-1", "completed"),
    ("agent_message_chunk", "It says "),
    ("agent_message_chunk", "hi."),
    ("result", 3, "end_turn"),
    ("agent_message_chunk", "Still hi."),
    ("result", 4, "end_turn"),
]


def check_outcome(frames: list[JsonObject], state_dir: Path, workspace: Path) -> None:
    frames = [f for f in frames if not is_update(f) or is_turn_update(f)]
    assert [describe(frame) for frame in frames] == EXPECTED
    completed = frames[5]["params"]["update"]
    assert completed["content"][0]["content"]["text"] == "hello from notes\n"
    journal = check_journal(state_dir, SESSION, workspace)
    assert journal.end_reasons() == ["completed", "completed"]
    assert [d["content"][0]["text"] for d in journal.of_type("user/message")] == [
        "what is in notes.txt?",
        "and now?",
    ]


def test_static_script_through_pipes(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "notes.txt").write_text("hello from notes\n", encoding="utf-8")
    command = serve_command(model_script(tmp_path))
    frames, stderr, code = run_agent_raw(script_lines(workspace), env=agent_env, command=command)
    assert code == 0, stderr.decode(errors="replace")
    check_outcome(frames, state_dir, workspace)


def test_static_script_with_regular_files_as_stdin_and_stdout(
    tmp_path: Path, workspace: Path, state_dir: Path
) -> None:
    """Also: the ``acp-agent serve`` console script, options from the environment, flags win."""
    (workspace / "notes.txt").write_text("hello from notes\n", encoding="utf-8")
    console_script = Path(sys.executable).parent / "acp-agent"
    command = [str(console_script), "serve", "--state-dir", str(state_dir)]
    env = {
        "ACP_AGENT_MODEL": f"script:{model_script(tmp_path)}",
        "ACP_AGENT_STATE_DIR": str(tmp_path / "not-this-one"),
    }
    inbox, outbox = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    inbox.write_bytes(b"".join(script_lines(workspace)))
    with inbox.open("rb") as stdin, outbox.open("wb") as stdout:
        completed = subprocess.run(
            command,
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env=child_env(env),
            timeout=20,
            check=False,
        )
    assert completed.returncode == 0, completed.stderr.decode(errors="replace")
    transcript = Transcript()
    transcript.feed_agent_output(outbox.read_bytes())
    transcript.end_agent_output()
    for data in script_lines(workspace):
        transcript.record_client_message(json.loads(data))
    transcript.validate()
    check_outcome(transcript.agent_frames, state_dir, workspace)
    assert not (tmp_path / "not-this-one").exists(), "the environment won over --state-dir"
