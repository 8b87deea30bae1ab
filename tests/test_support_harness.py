"""The recording harness, exercised against the SDK-built fake agent and a few broken ones."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from acp import RequestError

from tests.support import fake_agent
from tests.support.acp_schema import AcpSchema, FrameValidationError
from tests.support.recording import (
    AgentExitedError,
    AgentTimeoutError,
    RawAgent,
    RecordingClient,
    Transcript,
    agent_command,
    recorded_agent,
    run_agent_raw,
)

INITIALIZE = {"protocolVersion": 1, "clientCapabilities": {}}


def python_agent(source: str) -> list[str]:
    """A throw-away agent: ``source`` run by the current interpreter."""
    return [sys.executable, "-c", source]


# Answers every request with the given result, one JSON line each; reads until EOF.
ANSWER_ALL = """
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    if "id" in message:
        reply = {{"jsonrpc": "2.0", "id": message["id"], "result": {result}}}
        sys.stdout.write({prefix!r} + json.dumps(reply) + {suffix!r})
        sys.stdout.flush()
"""


def answer_all(result: str, prefix: str = "", suffix: str = "\n") -> list[str]:
    return python_agent(ANSWER_ALL.format(result=result, prefix=prefix, suffix=suffix))


# --- the official SDK client against the fake agent --------------------------------------------


async def test_sdk_client_session_is_recorded_and_valid(
    tmp_path: Path, acp_schema: AcpSchema
) -> None:
    client = RecordingClient()
    async with recorded_agent(client, fake_agent.command()) as agent:
        session_id = await agent.handshake(tmp_path)
        response = await agent.prompt_text(session_id, "hello")

    assert response.stop_reason == "end_turn"
    assert client.agent_text(session_id) == "echo: hello"
    transcript = agent.transcript
    assert [frame.get("id") for frame in transcript.responses()] == [0, 1, 2]
    assert transcript.request_methods() == {0: "initialize", 1: "session/new", 2: "session/prompt"}
    assert transcript.session_updates(session_id) == [
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "echo: hello"}}
    ]
    assert transcript.problems(acp_schema) == []
    assert agent.process.returncode == 0


async def test_env_reaches_the_agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ACP_AGENT_SCRIPT_REQUESTS", "from-os-environ")
    env = {"ACP_AGENT_MODEL": "script:demo", "ACP_AGENT_STATE_DIR": None}
    monkeypatch.setenv("ACP_AGENT_STATE_DIR", "must-be-removed")
    client = RecordingClient()
    async with recorded_agent(client, fake_agent.command(), env=env) as agent:
        session_id = await agent.handshake(tmp_path)
        for name in ("ACP_AGENT_MODEL", "ACP_AGENT_SCRIPT_REQUESTS", "ACP_AGENT_STATE_DIR"):
            await agent.prompt_text(session_id, f"env {name}")
    assert client.agent_text(session_id) == "script:demofrom-os-environ<unset>"


async def test_client_answers_file_reads_from_dict_and_disk(tmp_path: Path) -> None:
    on_disk = tmp_path / "real.txt"
    on_disk.write_text("from disk\n", encoding="utf-8")
    client = RecordingClient(files={"/virtual/a.txt": "one\ntwo\n"}, real_fs=True)
    async with recorded_agent(client, fake_agent.command()) as agent:
        session_id = await agent.handshake(tmp_path)
        await agent.prompt_text(session_id, "read /virtual/a.txt")
        await agent.prompt_text(session_id, f"read {on_disk}")
    assert client.agent_text(session_id) == "one\ntwo\nfrom disk\n"
    assert client.file_reads == [(session_id, "/virtual/a.txt"), (session_id, str(on_disk))]
    assert client.unexpected_calls == []


async def test_unadvertised_fs_calls_are_flagged(tmp_path: Path) -> None:
    client = RecordingClient(files={"/a": "x"}, advertise_fs=False)
    async with recorded_agent(client, fake_agent.command()) as agent:
        session_id = await agent.handshake(tmp_path)
        with pytest.raises(RequestError, match="Method not found"):
            await agent.prompt_text(session_id, "read /a")
    assert client.unexpected_calls == ["fs/read_text_file"]
    assert client.file_reads == []


async def test_missing_file_is_an_error_the_agent_sees(tmp_path: Path) -> None:
    client = RecordingClient()
    async with recorded_agent(client, fake_agent.command()) as agent:
        session_id = await agent.handshake(tmp_path)
        with pytest.raises(RequestError, match="Resource not found"):
            await agent.prompt_text(session_id, "read /no/such/file")
    errors = [frame for frame in agent.transcript.responses() if "error" in frame]
    assert [frame["id"] for frame in errors] == [2]


@pytest.mark.parametrize(
    ("permission", "outcome"),
    [("allow_once", "selected:allow"), ("deny", "selected:deny"), ("cancelled", "cancelled")],
)
async def test_client_answers_permission_as_configured(
    tmp_path: Path, permission: str, outcome: str
) -> None:
    client = RecordingClient(permission=permission)
    async with recorded_agent(client, fake_agent.command()) as agent:
        session_id = await agent.handshake(tmp_path)
        await agent.prompt_text(session_id, "permission")
    assert client.agent_text(session_id) == outcome
    [asked] = client.permission_requests
    assert [option.option_id for option in asked.options] == ["allow", "deny"]
    kinds = [update["sessionUpdate"] for update in agent.transcript.session_updates()]
    assert kinds == ["tool_call", "agent_message_chunk"]
    assert [frame["method"] for frame in agent.transcript.agent_requests()] == [
        "session/request_permission"
    ]


async def test_stderr_is_drained_so_a_chatty_agent_cannot_block(tmp_path: Path) -> None:
    async with recorded_agent(RecordingClient(), fake_agent.command()) as agent:
        session_id = await agent.handshake(tmp_path)
        await agent.prompt_text(session_id, "stderr 1000000")
    assert agent.stderr.count(b"x") == 1_000_000


async def test_recorded_agent_fails_the_test_on_an_invalid_frame(tmp_path: Path) -> None:
    # A `_meta` that is no object: the SDK salvages it silently, the schema does not.
    lenient = answer_all(
        '{"protocolVersion": 1, "sessionId": "s", "stopReason": "end_turn", "_meta": "oops"}'
    )
    with pytest.raises(FrameValidationError, match="'oops' is not of type 'object', 'null'"):
        async with recorded_agent(RecordingClient(), lenient) as agent:
            session_id = await agent.handshake(tmp_path)
            response = await agent.prompt_text(session_id, "hi")
            assert response.stop_reason == "end_turn"


# --- raw wire access ----------------------------------------------------------------------------


async def test_raw_agent_request_collects_notifications(tmp_path: Path) -> None:
    async with RawAgent(fake_agent.command()) as agent:
        init = await agent.request("initialize", INITIALIZE)
        assert init["result"]["protocolVersion"] == 1
        new = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        session_id = new["result"]["sessionId"]
        prompt = {"sessionId": session_id, "prompt": [{"type": "text", "text": "raw"}]}
        response = await agent.request("session/prompt", prompt)
        assert response == {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}}
        [note] = agent.skipped
        assert note["params"]["update"]["content"]["text"] == "echo: raw"


async def test_raw_agent_answers_agent_requests_with_respond_to(tmp_path: Path) -> None:
    def allow(request: dict[str, object]) -> dict[str, object]:
        assert request["method"] == "session/request_permission"
        return {"outcome": {"outcome": "selected", "optionId": "allow"}}

    async with RawAgent(fake_agent.command(), respond_to=allow) as agent:
        await agent.request("initialize", INITIALIZE)
        new = await agent.request("session/new", {"cwd": str(tmp_path), "mcpServers": []})
        prompt = {
            "sessionId": new["result"]["sessionId"],
            "prompt": [{"type": "text", "text": "permission"}],
        }
        response = await agent.request("session/prompt", prompt)
    assert response["result"] == {"stopReason": "end_turn"}
    texts = [
        frame["params"]["update"].get("content", {}).get("text")
        for frame in agent.skipped
        if frame.get("method") == "session/update"
    ]
    assert texts == [None, "selected:allow"]


async def test_raw_agent_send_recv_and_eof() -> None:
    async with RawAgent(fake_agent.command(), timeout=5) as agent:
        await agent.send(b'{"jsonrpc":"2.0","id":"a","method":"initialize",')
        await agent.send(b'"params":{"protocolVersion":1}}\n')
        frame = await agent.recv()
        assert frame["id"] == "a"
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
        with pytest.raises(AgentExitedError):
            await agent.recv()
    assert agent.transcript.request_methods() == {"a": "initialize"}


async def test_raw_agent_recv_times_out_with_stderr() -> None:
    async with RawAgent(fake_agent.command(), timeout=0.3) as agent:
        with pytest.raises(AgentTimeoutError, match="no frame from the agent"):
            await agent.recv()


async def test_raw_agent_reports_an_agent_that_ignores_eof() -> None:
    stubborn = python_agent("import time; time.sleep(60)")
    with pytest.raises(AssertionError, match="did not exit"):
        async with RawAgent(stubborn, grace=0.3):
            pass


async def test_raw_agent_reports_a_nonzero_exit() -> None:
    with pytest.raises(AssertionError, match="exited 3, not 0"):
        async with RawAgent(python_agent("import sys; sys.stdin.read(); sys.exit(3)")):
            pass


def test_run_agent_raw_pipes_lines_and_collects_output(tmp_path: Path) -> None:
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}',
        b'{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}\n',
        b"this is not json",
    ]
    frames, stderr, returncode = run_agent_raw(lines, command=fake_agent.command())
    assert returncode == 0
    assert sorted(frame["id"] for frame in frames) == [1, 2]
    assert b"Error parsing JSON-RPC message" in stderr  # the SDK agent just logs bad input


def test_run_agent_raw_rejects_stray_stdout() -> None:
    with pytest.raises(FrameValidationError, match="not JSON"):
        run_agent_raw(
            [b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}'],
            command=answer_all("{}", prefix="ready!\n"),
        )


def test_run_agent_raw_validates_results_by_method() -> None:
    request = b'{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/"}}'
    with pytest.raises(FrameValidationError, match="'sessionId' is a required property"):
        run_agent_raw([request], command=answer_all("{}"))
    frames, _, _ = run_agent_raw([request], command=answer_all("{}"), validate=False)
    assert frames == [{"jsonrpc": "2.0", "id": 7, "result": {}}]


def test_agent_command_runs_the_package_with_this_interpreter() -> None:
    assert agent_command("--flag") == [sys.executable, "-m", "acp_agent", "--flag"]


# --- the transcript's own checks ----------------------------------------------------------------


def transcript_of(agent_output: bytes, *client_messages: dict[str, object]) -> Transcript:
    transcript = Transcript()
    transcript.feed_agent_output(agent_output)
    transcript.end_agent_output()
    for message in client_messages:
        transcript.record_client_message(message)
    return transcript


PROMPT_REQUEST = {"jsonrpc": "2.0", "id": 5, "method": "session/prompt", "params": {}}


def test_transcript_splits_lines_across_chunks() -> None:
    transcript = Transcript()
    assert transcript.feed_agent_output(b'{"jsonrpc":"2.0",') == []
    assert transcript.feed_agent_output(b'"method":"_x"}\n{"a"') == [
        b'{"jsonrpc":"2.0","method":"_x"}\n'
    ]
    assert transcript.end_agent_output() == b'{"a"'


@pytest.mark.parametrize(
    ("output", "problem"),
    [
        (b'{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}', "not terminated"),
        (b"\n", "not JSON"),
        (b"[1]\n", "not an object"),
        (b'{"jsonrpc":"2.0","id":6,"result":{}}\n', "never requested"),
        (
            b'{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}\n' * 2,
            "second response to id 5",
        ),
        (b'{"jsonrpc":"2.0","id":5,"result":{"stopReason":"done"}}\n', "'done' is not one of"),
    ],
)
def test_transcript_problems(acp_schema: AcpSchema, output: bytes, problem: str) -> None:
    problems = transcript_of(output, PROMPT_REQUEST).problems(acp_schema)
    assert any(problem in p for p in problems), problems


def test_transcript_accepts_a_clean_exchange(acp_schema: AcpSchema) -> None:
    output = b'{"jsonrpc":"2.0","id":5,"result":{"stopReason":"end_turn"}}\n'
    transcript = transcript_of(output, PROMPT_REQUEST)
    assert transcript.problems(acp_schema) == []
    transcript.validate(acp_schema)
