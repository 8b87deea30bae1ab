"""The official TypeScript SDK's network transports against ``acp-agent serve --listen``.

``@agentclientprotocol/sdk`` 2.4.0 ``experimental/ws-client`` (``createWebSocketStream``) and
``experimental/http-client`` (``createHttpStream``) drive the real agent through
``ts_remote_client.mjs``: initialize, session/new, a streamed prompt whose tools make the agent
ask ``session/request_permission`` (answered) and use ``fs/*``, a cancel while it streams, a
prompt left running when the client closes the connection, then the reconnect rule of the SDK's
``ws-stream.d.ts`` / ``http-stream.d.ts`` (a new stream, ``initialize``, check
``agentCapabilities.loadSession``, ``session/load``) and one more prompt. Every message the agent
sent is validated against the ACP v1 schema (answers matched to the requests the client sent).
The journal shows what docs/contract.md §10 requires of the dropped connection with
``--detach-grace 0``: its running turn ended ``cancelled``; with a grace (§13) the turn goes on,
the reconnect's ``session/load`` answer says ``runningTurn`` and the client cancels it.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.clients.support import NPM_PREFIX, READ_THEN_WRITE, client_env, node, require
from tests.integration.support import check_journal, write_script
from tests.remote.support import TOKEN, listening
from tests.support.acp_schema import AcpSchema
from tests.support.transcript import Transcript

pytestmark = pytest.mark.subprocess

TS_CLIENT = Path(__file__).with_name("ts_remote_client.mjs")


@functools.cache
def websocket_flags() -> tuple[str, ...]:
    """Node 20 has its WebSocket (undici's) behind ``--experimental-websocket``; 22 and later
    have it on by default (and may drop the flag)."""
    probe = [node(), "-e", "process.exit(typeof WebSocket === 'function' ? 0 : 1)"]
    has_it = subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0
    return () if has_it else ("--experimental-websocket",)


def validate_wire(wire: dict[str, Any], schema: AcpSchema) -> Transcript:
    transcript = Transcript.of_wire(wire)
    transcript.validate(schema)
    return transcript


@pytest.mark.parametrize("grace", ["0", "600"])
@pytest.mark.parametrize("scheme", ["ws", "http"])
def test_typescript_sdk_over_the_network(
    scheme: str,
    grace: str,
    tmp_path: Path,
    home: Path,
    workspace: Path,
    state_dir: Path,
    acp_schema: AcpSchema,
) -> None:
    (workspace / "notes.txt").write_text("hello from disk\n")
    script = write_script(
        tmp_path / "script.jsonl",
        *READ_THEN_WRITE,
        {"chunks": ["partial"], "hang": True},
        {"chunks": ["left running"], "hang": True},
        {"text": "welcome back"},
    )
    flags = ("--log-level", "info", "--detach-grace", grace)
    with listening(script, state_dir, *flags, scheme=scheme) as agent:
        completed = subprocess.run(
            [
                node(),
                *websocket_flags(),
                "--no-warnings",
                str(TS_CLIENT),
                str(require(NPM_PREFIX / "package.json").parent),
                str(workspace),
                scheme,
                agent.url,
                TOKEN,
            ],
            env=client_env(home, state_dir),
            capture_output=True,
            text=True,
            timeout=45,
            check=False,
        )
        assert completed.returncode == 0, (
            f"{completed.stdout[-2000:]}\n{completed.stderr[-4000:]}\n{agent.log_text()[-4000:]}"
        )
    summary = json.loads(completed.stdout)
    first, second = summary["first"], summary["second"]
    validate_wire(first["wire"], acp_schema)
    validate_wire(second["wire"], acp_schema)

    assert first["init"]["agentCapabilities"]["loadSession"] is True
    tools = first["tools"]
    assert tools["stopReason"] == "end_turn"
    assert tools["text"] == "The file says: hello from disk"
    assert ["w1", "completed"] in tools["statuses"]
    log = first["log"]
    assert log["reads"][0] == str(workspace / "notes.txt")
    assert [p["toolCall"]["toolCallId"] for p in log["permissions"]] == ["w1"]
    assert (workspace / "out.txt").read_text() == "x"
    assert first["cancel"] == {"stopReason": "cancelled", "text": "partial"}
    assert first["runningText"] == "left running"

    # The reconnect: the replay holds the whole history, the session takes a new prompt.
    replay = second["replay"]
    users = [u["content"]["text"] for u in replay if u["sessionUpdate"] == "user_message_chunk"]
    assert users == ["use the tools", "take your time", "still running when I leave"]
    assert second["afterStopReason"] == "end_turn"
    after = [u for u in second["log"]["updates"] if u["sessionUpdate"] == "agent_message_chunk"]
    assert after[-1]["content"]["text"] == "welcome back"

    journal = check_journal(state_dir, first["sessionId"], workspace)
    # docs/contract.md §10: the turn running when its connection went away ended cancelled;
    # §13: with a grace it went on, the reattached client was told (runningTurn) and cancelled it
    assert journal.end_reasons() == ["completed", "cancelled", "cancelled", "completed"]
    assert second["runningTurn"] == (None if grace == "0" else {"turn": 3})
