"""Valid JSON at the edges of what decoders accept, against the real agent process (issue 14).

1. Escaped lone surrogates (``"\\ud83d"``): RFC 8259 allows them and JavaScript's
   ``JSON.stringify`` writes one for a string cut mid-emoji. The agent reads each as U+FFFD and
   answers under the message's own id: in a request's params, in a notification, and in the
   client's answer to the agent's own ``fs/read_text_file`` (else that turn hangs). A valid
   pair stays the character it encodes, and an escaped backslash before ``u`` stays text.
2. A UTF-8 byte order mark at the very start of the input is ignored (RFC 8259 §8.1); one at the
   start of a later line is a -32700 naming it (a BOM marks the start of a stream, nothing else).
3. ``mcpServers: null`` and ``additionalDirectories: null`` (``x-deserialize-default-on-null`` in
   the ACP schema) are read as empty for new, load, resume and fork.

Every frame the agent writes is validated against the ACP schema (``RawAgent`` does it on exit)
and every journal these tests create passes ``check_journal``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import (
    check_journal,
    is_update,
    line,
    new_session,
    prompt,
    read_call,
    request,
    serve_command,
    tool_text,
    validate_frames,
    write_script,
)
from tests.support.acp_schema import AcpSchema, JsonObject, schema_path
from tests.support.recording import RawAgent

pytestmark = pytest.mark.subprocess

INIT = {"protocolVersion": 1}
FS_INIT = {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": True}}}
PARSE_ERROR = -32700
BOM = b"\xef\xbb\xbf"
SID = "edges"
WAIT_S = 5.0
"""A hung turn shows as a timeout this soon; everything here answers in well under a second."""

# (JSON text of a string, what the agent must read it as)
SURROGATE_STRINGS: dict[str, tuple[str, str]] = {
    "lone high at the end": ('"cut \\ud83d"', "cut \ufffd"),
    "lone high before text": ('"\\ud83dx"', "\ufffdx"),
    "lone high before an escape": ('"\\ud83d\\u0041"', "\ufffdA"),
    "lone low": ('"\\ude00 low"', "\ufffd low"),
    "upper-case hex": ('"\\uD83D|\\uDE00"', "\ufffd|\ufffd"),
    "two highs then a pair": ('"\\ud83d\\ud83d\\ude00"', "\ufffd\U0001f600"),
    "escaped backslash, then a lone high": ('"\\\\\\ud83d"', "\\\ufffd"),
    "escaped backslash before u is text": ('"\\\\ud83d \\ud83d"', "\\ud83d \ufffd"),
}
VALID_STRINGS: dict[str, tuple[str, str]] = {
    "a valid pair": ('"\\ud83d\\ude00"', "\U0001f600"),
    "only an escaped backslash before u": ('"\\\\ud83d"', "\\ud83d"),
}


def text_frame(request_id: int | str, method: str, params_text: str) -> bytes:
    """One request line whose ``params`` are given as JSON text (kept exactly as written)."""
    head = json.dumps({"jsonrpc": "2.0", "id": request_id, "method": method})
    return f'{head[:-1]},"params":{params_text}}}\n'.encode()


def prompt_line(request_id: int, session_id: str, text_json: str) -> bytes:
    block = f'{{"type":"text","text":{text_json}}}'
    return text_frame(
        request_id, "session/prompt", f'{{"sessionId":"{session_id}","prompt":[{block}]}}'
    )


async def answer(agent: RawAgent, request_id: Any, within: float = WAIT_S) -> JsonObject:
    """The response to ``request_id``; fails on a -32700 or a timeout instead."""
    while True:
        frame = await agent.recv(within)
        if "method" in frame:
            continue
        if frame.get("error", {}).get("code") == PARSE_ERROR:
            raise AssertionError(f"the agent could not parse the line: {frame}")
        if frame.get("id") == request_id:
            return frame


async def start_session(agent: RawAgent, workspace: Path, init: JsonObject = INIT) -> None:
    await agent.send(request(1, "initialize", init))
    assert "result" in await answer(agent, 1)
    await agent.send(new_session(2, workspace, SID))
    assert "result" in await answer(agent, 2)


def user_texts(state_dir: Path, workspace: Path) -> list[str]:
    journal = check_journal(state_dir, SID, workspace)
    return [block["text"] for data in journal.of_type("user/message") for block in data["content"]]


# --- 1. lone surrogates -----------------------------------------------------------------------


@pytest.mark.parametrize("case", [*SURROGATE_STRINGS, *VALID_STRINGS])
async def test_a_surrogate_escape_in_request_params_is_answered_under_its_id(
    case: str, tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    text_json, expected = {**SURROGATE_STRINGS, **VALID_STRINGS}[case]
    script = write_script(tmp_path / "script.jsonl", {"text": "ok"})
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        await start_session(agent, workspace)
        await agent.send(prompt_line(3, SID, text_json))
        assert (await answer(agent, 3))["result"]["stopReason"] == "end_turn"
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
    assert user_texts(state_dir, workspace) == [expected]


async def test_a_lone_surrogate_in_the_id_itself_is_read_as_u_fffd(
    agent_env: dict[str, str], acp_schema: AcpSchema
) -> None:
    """The id is answered as the agent read it: an id cut mid-emoji cannot be echoed as sent
    (it is no Unicode text), and the line is no longer answered -32700 with ``id: null``."""
    async with RawAgent(env=agent_env, validate=False) as agent:  # the id differs, by design
        await agent.send(text_frame("r-\ud83d", "initialize", '{"protocolVersion":1}'))
        frame = await agent.recv(WAIT_S)
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
    validate_frames(agent.transcript, acp_schema)
    assert frame["id"] == "r-\ufffd" and frame["result"]["protocolVersion"] == 1, frame


async def test_a_lone_surrogate_in_a_notification_is_read(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    """``session/cancel`` with a lone surrogate in its ``_meta`` still cancels the turn."""
    script = write_script(tmp_path / "script.jsonl", {"chunks": ["thinking"], "hang": True})
    cancel = (
        '{"jsonrpc":"2.0","method":"session/cancel",'
        f'"params":{{"sessionId":"{SID}","_meta":{{"note":"cut \\ud83d"}}}}}}\n'
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        await start_session(agent, workspace)
        await agent.send(line(prompt(3, SID, "hang")))
        while not is_update(await agent.recv(WAIT_S), SID):
            pass
        await agent.send(cancel.encode())
        assert (await answer(agent, 3))["result"]["stopReason"] == "cancelled"
        await agent.close_stdin()
        assert await agent.wait_exit() == 0


@pytest.mark.parametrize("case", ["lone high at the end", "lone low", "a valid pair"])
async def test_a_lone_surrogate_in_the_clients_fs_answer_completes_the_turn(
    case: str, tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    """The answer to ``fs/read_text_file`` is a response: it must reach its waiting tool call."""
    text_json, expected = {**SURROGATE_STRINGS, **VALID_STRINGS}[case]
    script = write_script(
        tmp_path / "script.jsonl", {"toolCalls": [read_call("c1", "a.txt")]}, {"text": "fin"}
    )
    async with RawAgent(serve_command(script), env=agent_env) as agent:
        await start_session(agent, workspace, FS_INIT)
        await agent.send(line(prompt(3, SID, "read it")))
        while (frame := await agent.recv(WAIT_S)).get("method") != "fs/read_text_file":
            pass
        reply = f'{{"jsonrpc":"2.0","id":{json.dumps(frame["id"])},"result":{{"content":{text_json}}}}}\n'
        await agent.send(reply.encode())
        done = await answer(agent, 3)
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
    assert done["result"]["stopReason"] == "end_turn", done
    journal = check_journal(state_dir, SID, workspace)
    (result,) = journal.of_type("tool/result")
    assert result["isError"] is False, result
    assert expected in json.dumps(result["content"], ensure_ascii=False), result
    (finished,) = [
        f["params"]["update"]
        for f in agent.transcript.agent_frames
        if is_update(f, SID) and f["params"]["update"].get("status") == "completed"
    ]
    assert expected in tool_text(finished), finished


# --- 2. byte order marks ------------------------------------------------------------------------


@pytest.mark.parametrize("pieces", [1, 2], ids=["one write", "split inside the BOM"])
async def test_a_bom_at_the_start_of_the_input_is_ignored(
    pieces: int, agent_env: dict[str, str]
) -> None:
    data = BOM + line(request(1, "initialize", INIT))
    async with RawAgent(env=agent_env) as agent:
        if pieces == 1:
            await agent.send(data)
        else:
            await agent.send(data[:2])
            await agent.send(data[2:])
        frame = await agent.recv(WAIT_S)
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
    assert frame.get("id") == 1 and frame["result"]["protocolVersion"] == 1, frame


async def test_a_bom_at_the_start_of_a_later_line_is_a_parse_error_naming_it(
    agent_env: dict[str, str],
) -> None:
    async with RawAgent(env=agent_env) as agent:
        await agent.send(line(request(1, "initialize", INIT)))
        assert (await agent.recv(WAIT_S))["id"] == 1
        await agent.send(BOM + line(request(2, "initialize", INIT)))
        refused = await agent.recv(WAIT_S)
        await agent.send(line(request(3, "initialize", INIT)))
        after = await agent.recv(WAIT_S)
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
    assert refused["id"] is None and refused["error"]["code"] == PARSE_ERROR, refused
    assert "byte order mark" in refused["error"]["data"]["reason"], refused
    assert after["id"] == 3 and "result" in after, after


# --- 3. null as empty ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def unstable_schema() -> AcpSchema:
    """The stable schema has no ``session/fork``."""
    return AcpSchema.load(schema_path().with_name("schema.unstable.json"))


NULLS: dict[str, JsonObject] = {
    "mcpServers": {"mcpServers": None},
    "additionalDirectories": {"mcpServers": [], "additionalDirectories": None},
    "both": {"mcpServers": None, "additionalDirectories": None},
    "both absent": {},
}


@pytest.mark.parametrize("case", NULLS)
async def test_null_lists_are_empty_for_new_load_resume_and_fork(
    case: str,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
    unstable_schema: AcpSchema,
) -> None:
    nulls = NULLS[case]
    session = {"sessionId": SID, "cwd": str(workspace), **nulls}
    calls = [
        (
            "session/new",
            {"cwd": str(workspace), **nulls, "_meta": {"acp_agent": {"sessionId": SID}}},
        ),
        ("session/load", session),
        ("session/resume", session),
        ("session/fork", {**session, "_meta": {"acp_agent": {"sessionId": "forked"}}}),
    ]
    async with RawAgent(env=agent_env, validate=False) as agent:  # fork: the unstable schema
        assert "result" in await agent.request("initialize", INIT)
        answers = {method: await agent.request(method, params) for method, params in calls}
        await agent.close_stdin()
        assert await agent.wait_exit() == 0
    validate_frames(agent.transcript, unstable_schema)
    failed = {method: frame["error"] for method, frame in answers.items() if "error" in frame}
    assert not failed, failed
    assert answers["session/new"]["result"]["sessionId"] == SID
    assert answers["session/fork"]["result"]["sessionId"] == "forked"
    check_journal(state_dir, SID, workspace)
