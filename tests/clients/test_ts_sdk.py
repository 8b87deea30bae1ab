"""The official TypeScript SDK (``@agentclientprotocol/sdk`` 2.x, ``client().connectWith``)
drives the real agent through ``ts_client.mjs``; this test asserts on the JSON summary it prints.

Covered: initialize (with the steering advertisement claude-agent-acp / codex-acp clients check),
session/new through ``SessionBuilder``, a streamed prompt whose tools make the agent call
``fs/read_text_file``, ``session/request_permission`` and ``fs/write_text_file``, cancel while
streaming, ``_acp_agent/inject``, ``_session/steering`` into a running turn (``injected``) and
while idle (``startedNewTurn``), ``_acp_agent/when_idle``, an unknown extension (-32601), and
``session/load`` on a new agent process. Every raw line each agent wrote is validated against the
ACP v1 schema, responses matched to the requests the SDK sent.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.support import NPM_PREFIX, READ_THEN_WRITE, client_env, node, require
from tests.integration.support import check_journal, write_script
from tests.support.acp_schema import AcpSchema
from tests.support.process import agent_command
from tests.support.requests import read_requests
from tests.support.transcript import Transcript

pytestmark = pytest.mark.subprocess

TS_CLIENT = Path(__file__).with_name("ts_client.mjs")


def validate_wire(wire: dict[str, Any], schema: AcpSchema) -> Transcript:
    transcript = Transcript.of_wire(wire)
    transcript.validate(schema)
    return transcript


def test_typescript_sdk_client(
    tmp_path: Path, home: Path, workspace: Path, state_dir: Path, acp_schema: AcpSchema
) -> None:
    (workspace / "notes.txt").write_text("hello from disk\n")
    script = write_script(
        tmp_path / "script.jsonl",
        *READ_THEN_WRITE,
        {"chunks": ["partial"], "hang": True},
        {"chunks": ["a", "b", "c"], "delayMs": 300},
        {"text": "steered reply"},
        {"text": "idle turn reply"},
    )
    unused = write_script(tmp_path / "second.jsonl", {"text": "never asked"})
    requests = tmp_path / "requests.jsonl"
    first_agent = agent_command("--model", f"script:{script}", "--log-level", "warning")
    second_agent = agent_command("--model", f"script:{unused}", "--log-level", "warning")
    completed = subprocess.run(
        [
            node(),
            str(TS_CLIENT),
            str(require(NPM_PREFIX / "package.json").parent),
            str(workspace),
            json.dumps(first_agent),
            json.dumps(second_agent),
        ],
        env=client_env(home, state_dir, ACP_AGENT_SCRIPT_REQUESTS=str(requests)),
        capture_output=True,
        text=True,
        timeout=45,
        check=False,
    )
    assert completed.returncode == 0, f"{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}"
    summary = json.loads(completed.stdout)
    first, second = summary["first"], summary["second"]
    assert first["exitCode"] == 0 and second["exitCode"] == 0

    validate_wire(first["wire"], acp_schema)
    validate_wire(second["wire"], acp_schema)
    assert first["init"]["_meta"] == {"steering": {"supported": True}}
    sid = first["sessionId"]

    tools = first["tools"]
    assert tools["stopReason"] == tools["viaQueue"] == "end_turn"
    assert tools["statuses"] == [
        ["r1", "in_progress"],
        ["r1", "completed"],
        ["w1", "in_progress"],
        ["w1", "completed"],
    ]
    assert tools["text"] == "The file says: hello from disk"
    log = first["log"]
    assert log["reads"][0] == str(workspace / "notes.txt")
    assert [p["toolCall"]["toolCallId"] for p in log["permissions"]] == ["w1"]
    assert log["writes"] == [str(workspace / "out.txt")]
    assert (workspace / "out.txt").read_text() == "x"

    assert first["cancel"] == {
        "stopReason": "cancelled",
        "viaQueue": "cancelled",
        "text": "partial",
    }
    assert first["inject"]["placement"] == "appended"

    steering = first["steering"]
    assert steering["running"] == {"outcome": "injected"}
    assert steering["turnStopReason"] == "end_turn"
    assert steering["turnText"] == "abcsteered reply"
    assert steering["idle"] == {"outcome": "startedNewTurn"}
    assert steering["whenIdle"]["journal"]["healthy"] is True
    assert first["unknownExtension"]["error"]["code"] == -32601

    # What the model saw: the steering message joined the running turn as a second step; the
    # idle one opened a turn of its own.
    asked = read_requests(requests)
    steered = [r for r in asked if r["turn"] == 3]
    assert [r["step"] for r in steered] == [1, 2]
    assert steered[1]["messages"][-1]["content"] == [{"type": "text", "text": "also mention tabs"}]
    (idle_turn,) = [r for r in asked if r["turn"] == 4]
    assert idle_turn["messages"][-1]["content"] == [{"type": "text", "text": "and one more thing"}]

    replay = second["replay"]
    users = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert users == [
        "use the tools",
        "take your time",
        "The user prefers tabs.",
        "a long job",
        "also mention tabs",
        "and one more thing",
    ]
    agent_text = "".join(
        u["content"]["text"] for u in replay if u["sessionUpdate"] == "agent_message_chunk"
    )
    assert agent_text == "The file says: hello from disk" + "partial" + "abcsteered reply" + (
        "idle turn reply"
    )
    assert {"toolCallId": "w1", "status": "completed"}.items() <= next(
        u for u in replay if u.get("toolCallId") == "w1" and u.get("status") == "completed"
    ).items()

    journal = check_journal(state_dir, sid, workspace)
    assert journal.end_reasons() == ["completed", "cancelled", "completed", "completed"]
    assert len(journal.of_type("steering/message")) == 1
