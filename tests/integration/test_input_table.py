"""Every row of the JSON-RPC input table (``reliability.md``) against the real agent process.

Each test starts one agent on raw pipes (``RawAgent``), sends the lines of its row one at a time
and reads the answer to each, then checks the agent still answers a valid request (nothing
came in between) and exits 0 at EOF. The last test mixes every row with valid requests in one
static script. A handler bug (-32603) cannot be provoked from outside; the transport's unit
tests cover it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import (
    cancel,
    line,
    new_session,
    prompt,
    request,
    serve_command,
    validate_frames,
    write_script,
)
from tests.support.acp_schema import AcpSchema, JsonObject
from tests.support.recording import RawAgent, Transcript, run_agent_raw

pytestmark = pytest.mark.subprocess

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS = -32700, -32600, -32601, -32602
RESOURCE_NOT_FOUND = -32002

INIT = {"protocolVersion": 1}
NULL = None


def raw(text: str) -> bytes:
    return text.encode() + b"\n"


UNPARSABLE = {
    "invalid UTF-8": b'{"jsonrpc":"2.0","id":1,"method":"initialize","x":"\xff\xfe"}\n',
    "UTF-8 surrogate": b'{"jsonrpc":"2.0","id":1,"method":"initialize","x":"\xed\xa0\x80"}\n',
    "truncated": raw('{"jsonrpc":"2.0","id":1,"method":"initia'),
    "unquoted keys": raw('{"jsonrpc": "2.0", id: 1, method: "initialize"}'),
    "trailing garbage": raw('{"jsonrpc":"2.0","id":1,"method":"initialize"}}'),
    "single quotes": raw("{'jsonrpc': '2.0', 'id': 1}"),
    "plain text": raw("hello agent"),
}

NOT_AN_OBJECT = {
    "number": raw("42"),
    "string": raw('"initialize"'),
    "null": raw("null"),
    "boolean": raw("true"),
    "empty array": raw("[]"),
    "batch": raw('[{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":1}}]'),
}

# (line, the id the answer must carry)
BAD_ENVELOPES: dict[str, tuple[bytes, Any]] = {
    "no jsonrpc": (raw('{"id":7,"method":"initialize","params":{"protocolVersion":1}}'), 7),
    "jsonrpc 1.0": (raw('{"jsonrpc":"1.0","id":8,"method":"initialize"}'), 8),
    "jsonrpc as number": (raw('{"jsonrpc":2.0,"id":"s-9","method":"initialize"}'), "s-9"),
    "method is a number": (raw('{"jsonrpc":"2.0","id":10,"method":42}'), 10),
    "method is null": (raw('{"jsonrpc":"2.0","id":11,"method":null}'), 11),
    "method is an object": (raw('{"jsonrpc":"2.0","id":"m","method":{"a":1}}'), "m"),
    "id is a float": (raw('{"jsonrpc":"2.0","id":1.5,"method":"initialize"}'), NULL),
    "id is an object": (raw('{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}'), NULL),
    "id is an array": (raw('{"jsonrpc":"2.0","id":[12],"method":"initialize"}'), NULL),
    "id is a boolean": (raw('{"jsonrpc":"2.0","id":false,"method":"initialize"}'), NULL),
    "result and error": (
        raw('{"jsonrpc":"2.0","id":13,"result":{},"error":{"code":1,"message":"x"}}'),
        13,
    ),
    "neither method nor result": (raw('{"jsonrpc":"2.0","id":14}'), 14),
}


async def answer_to(agent: RawAgent, data: bytes) -> JsonObject:
    """Send ``data`` and return the next frame the agent writes."""
    await agent.send(data)
    return await agent.recv()


def assert_error(frame: JsonObject, code: int, request_id: Any, case: str = "") -> JsonObject:
    where = f"[{case}] " if case else ""
    assert "error" in frame and "result" not in frame, f"{where}{frame}"
    assert frame["error"]["code"] == code, f"{where}expected code {code}: {frame}"
    assert frame["id"] == request_id, f"{where}expected id {request_id!r}: {frame}"
    assert type(frame["id"]) is type(request_id), f"{where}expected id {request_id!r}: {frame}"
    message = frame["error"]["message"]
    assert isinstance(message, str) and message, f"{where}{frame}"
    error: JsonObject = frame["error"]
    return error


async def still_serving(agent: RawAgent, request_id: int) -> None:
    """The very next frame is the answer to a valid ``initialize``."""
    frame = await answer_to(agent, line(request(request_id, "initialize", INIT)))
    assert frame.get("id") == request_id and frame["result"]["protocolVersion"] == 1, frame


async def finish(agent: RawAgent) -> Transcript:
    """Close stdin; the agent must exit 0."""
    await agent.close_stdin()
    assert await agent.wait_exit() == 0
    return agent.transcript


def one_line_script(tmp_path: Path) -> Path:
    return write_script(tmp_path / "script.jsonl", {"text": "ok"}, {"text": "ok again"})


# --- one test per row --------------------------------------------------------------------------


async def test_empty_and_whitespace_lines_are_ignored(agent_env: dict[str, str]) -> None:
    async with RawAgent(env=agent_env) as agent:
        await agent.send(b"\n" + b"   \n" + b"\t \r\n" + b"\r\n" + b"\n\n")
        await still_serving(agent, 1)
        transcript = await finish(agent)
    assert len(transcript.agent_lines) == 1, transcript.agent_lines


async def test_unparsable_lines_are_parse_errors_with_null_id(agent_env: dict[str, str]) -> None:
    async with RawAgent(env=agent_env) as agent:
        for case, data in UNPARSABLE.items():
            assert_error(await answer_to(agent, data), PARSE_ERROR, NULL, case)
        await still_serving(agent, 100)
        await finish(agent)


async def test_json_that_is_not_an_object_is_an_invalid_request_with_null_id(
    agent_env: dict[str, str],
) -> None:
    async with RawAgent(env=agent_env) as agent:
        for case, data in NOT_AN_OBJECT.items():
            assert_error(await answer_to(agent, data), INVALID_REQUEST, NULL, case)
        await still_serving(agent, 100)
        transcript = await finish(agent)
    assert all(frame.get("id") != 5 for frame in transcript.agent_frames), "a batch ran"


async def test_bad_envelopes_are_invalid_requests_with_the_id_when_usable(
    agent_env: dict[str, str], acp_schema: AcpSchema
) -> None:
    async with RawAgent(env=agent_env, validate=False) as agent:
        for case, (data, request_id) in BAD_ENVELOPES.items():
            assert_error(await answer_to(agent, data), INVALID_REQUEST, request_id, case)
        await still_serving(agent, 100)
        transcript = await finish(agent)
    validate_frames(transcript, acp_schema)


async def test_unknown_methods(agent_env: dict[str, str]) -> None:
    async with RawAgent(env=agent_env) as agent:
        for request_id, method in enumerate(
            ["foo/bar", "_x/y", "_acp_agent/nope", "session/Prompt"], 1
        ):
            frame = await answer_to(agent, line(request(request_id, method, {})))
            assert_error(frame, METHOD_NOT_FOUND, request_id, method)
        # Unknown notifications get nothing at all: the next frame answers the next request.
        for method in ["foo/bar", "_x/y", "_acp_agent/nope"]:
            await agent.notify(method, {"a": 1})
        await agent.notify("_x/no-params")
        await still_serving(agent, 100)
        await finish(agent)


async def test_params_of_the_wrong_shape_name_the_path(
    agent_env: dict[str, str], workspace: Path
) -> None:
    session = {"cwd": str(workspace), "mcpServers": []}
    cases: list[tuple[str, str, Any, str]] = [
        ("cwd is a number", "session/new", {"cwd": 5, "mcpServers": []}, "cwd"),
        ("prompt is a string", "session/prompt", {"sessionId": "s", "prompt": "x"}, "prompt"),
        (
            "block without text",
            "session/prompt",
            {"sessionId": "s", "prompt": [{"type": "text"}]},
            "prompt",
        ),
        ("sessionId is a number", "session/prompt", {"sessionId": 1, "prompt": []}, "sessionId"),
        (
            "capabilities are text",
            "initialize",
            {**INIT, "clientCapabilities": "all"},
            "clientCapabilities",
        ),
        ("mcpServers is an object", "session/new", {**session, "mcpServers": {}}, "mcpServers"),
        ("relative cwd", "session/new", {"cwd": "relative/dir", "mcpServers": []}, "cwd"),
        ("cwd missing", "session/new", {"mcpServers": []}, "cwd"),
        ("params are an array", "session/new", [str(workspace)], "$"),
    ]
    async with RawAgent(env=agent_env) as agent:
        await agent.request("initialize", INIT)
        for case, method, params, path in cases:
            frame = await agent.request(method, params)
            error = assert_error(frame, INVALID_PARAMS, frame["id"], case)
            data = error.get("data")
            assert isinstance(data, dict), f"[{case}] -32602 without data: {frame}"
            assert path in str(data.get("path", "")) + str(data.get("reason", "")), (
                f"[{case}] data does not name {path!r}: {data}"
            )
        await still_serving(agent, 100)
        await finish(agent)


async def test_requested_session_ids_are_validated(
    agent_env: dict[str, str], workspace: Path, state_dir: Path
) -> None:
    async with RawAgent(env=agent_env) as agent:
        await agent.request("initialize", INIT)
        for bad in ["../evil", "", ".hidden", "a/b", "x" * 129, "sp ace"]:
            params = {
                "cwd": str(workspace),
                "mcpServers": [],
                "_meta": {"acp_agent": {"sessionId": bad}},
            }
            frame = await agent.request("session/new", params)
            assert_error(frame, INVALID_PARAMS, frame["id"], f"session id {bad!r}")
        good = await agent.request("session/new", new_session(0, workspace, "dup")["params"])
        assert good["result"]["sessionId"] == "dup"
        again = await agent.request("session/new", new_session(0, workspace, "dup")["params"])
        assert "error" in again, f"an id already in use was accepted: {again}"
        await finish(agent)
    assert sorted(p.name for p in (state_dir / "sessions").iterdir()) == ["dup"]
    assert not (state_dir / "evil").exists() and not (state_dir.parent / "evil").exists()


async def test_unknown_session_id_is_resource_not_found(
    agent_env: dict[str, str], tmp_path: Path
) -> None:
    command = serve_command(one_line_script(tmp_path))
    async with RawAgent(command, env=agent_env) as agent:
        await agent.request("initialize", INIT)
        frame = await agent.request("session/prompt", prompt(0, "no-such-session", "hi")["params"])
        assert_error(frame, RESOURCE_NOT_FOUND, frame["id"])
        await agent.send(line(cancel("no-such-session")))  # a notification: no answer
        await still_serving(agent, 100)
        await finish(agent)


async def test_extra_fields_and_meta_are_accepted(
    agent_env: dict[str, str], tmp_path: Path, workspace: Path
) -> None:
    command = serve_command(one_line_script(tmp_path))
    meta = {"_meta": {"vendor.example/trace": {"id": "t-1"}}}
    async with RawAgent(command, env=agent_env) as agent:
        await agent.send(
            line(
                {
                    "jsonrpc": "2.0",
                    "id": 100,
                    "method": "initialize",
                    "extra": True,
                    "params": {
                        **INIT,
                        "clientInfo": {"name": "c", "version": "1", "x": 1},
                        "clientCapabilities": {"fs": {}, "future": {"a": 1}, **meta},
                        "futureField": [1, 2],
                        **meta,
                    },
                }
            )
        )
        assert (await agent.recv())["result"]["protocolVersion"] == 1
        created = await agent.request(
            "session/new",
            {
                "cwd": str(workspace),
                "mcpServers": [],
                "additionalDirectories": [],
                "future": 1,
                **meta,
            },
        )
        sid = created["result"]["sessionId"]
        block = {"type": "text", "text": "hi", "annotations": {"priority": 1}, **meta}
        answer = await agent.request(
            "session/prompt", {"sessionId": sid, "prompt": [block], "futureField": "x", **meta}
        )
        assert answer["result"]["stopReason"] == "end_turn", answer
        await finish(agent)


async def test_responses_with_unknown_ids_are_dropped(agent_env: dict[str, str]) -> None:
    async with RawAgent(env=agent_env) as agent:
        await agent.send(raw('{"jsonrpc":"2.0","id":999,"result":{"content":"x"}}'))
        await agent.send(raw('{"jsonrpc":"2.0","id":"zzz","error":{"code":-32000,"message":"no"}}'))
        await agent.send(raw('{"jsonrpc":"2.0","id":null,"result":null}'))
        await still_serving(agent, 1)
        transcript = await finish(agent)
    assert len(transcript.agent_lines) == 1, transcript.agent_lines
    assert b"999" in agent.stderr, "the dropped response was not logged"


async def test_a_line_over_the_cap_is_skipped_and_serving_goes_on(
    agent_env: dict[str, str], tmp_path: Path
) -> None:
    env = {**agent_env, "ACP_AGENT_MAX_LINE_BYTES": str(1024 * 1024)}
    huge = prompt(50, "s", "x" * (3 * 1024 * 1024))
    async with RawAgent(env=env, timeout=20) as agent:
        frame = await answer_to(agent, line(huge))
        error = assert_error(frame, INVALID_REQUEST, NULL)
        assert error.get("data", {}).get("reason") == "line_too_long", error
        await still_serving(agent, 1)
        transcript = await finish(agent)
    assert len(transcript.agent_lines) == 2, "the rest of the long line was read as frames"


# --- the corpus --------------------------------------------------------------------------------


def corpus(
    workspace: Path, long_line: bytes
) -> tuple[list[bytes], list[tuple[Any, Any]], list[int]]:
    """(lines, the answers expected in order as (id, code or "ok"), the prompt request ids).

    Prompts are answered when their turn ends, so they are checked apart.
    """
    lines: list[bytes] = []
    expected: list[tuple[Any, Any]] = []

    def valid(frame: JsonObject) -> None:
        lines.append(line(frame))
        if frame["method"] != "session/prompt":
            expected.append((frame["id"], "ok"))

    def bad(data: bytes, request_id: Any, code: int | None) -> None:
        lines.append(data if data.endswith(b"\n") else data + b"\n")
        if code is not None:
            expected.append((request_id, code))

    valid(request(1, "initialize", INIT))
    bad(b"", None, None)
    for data in UNPARSABLE.values():
        bad(data, NULL, PARSE_ERROR)
    valid(new_session(2, workspace, "corpus"))
    for data in NOT_AN_OBJECT.values():
        bad(data, NULL, INVALID_REQUEST)
    valid(prompt(3, "corpus", "first"))
    bad(b"  \t ", None, None)
    for data, request_id in BAD_ENVELOPES.values():
        bad(data, request_id, INVALID_REQUEST)
    valid(request(4, "initialize", INIT))
    bad(line(request(20, "_x/y", {})), 20, METHOD_NOT_FOUND)
    bad(line({"jsonrpc": "2.0", "method": "_x/y", "params": {}}), None, None)
    bad(line(request(21, "session/new", {"cwd": 5, "mcpServers": []})), 21, INVALID_PARAMS)
    bad(
        line(request(22, "session/prompt", {"sessionId": "corpus", "prompt": "x"})),
        22,
        INVALID_PARAMS,
    )
    bad(line(request(23, "session/new", {"cwd": "rel", "mcpServers": []})), 23, INVALID_PARAMS)
    bad(line(prompt(24, "nobody", "hi")), 24, RESOURCE_NOT_FOUND)
    bad(long_line, NULL, INVALID_REQUEST)
    bad(raw('{"jsonrpc":"2.0","id":998,"result":{}}'), None, None)
    valid({**prompt(5, "corpus", "second"), "_meta": {"x": 1}, "extra": 1})
    valid(request(6, "initialize", {**INIT, "_meta": {"y": 2}}))
    return lines, expected, [3, 5]


def test_a_corpus_of_bad_lines_between_valid_requests(
    agent_env: dict[str, str], tmp_path: Path, workspace: Path, acp_schema: AcpSchema
) -> None:
    env = {**agent_env, "ACP_AGENT_MAX_LINE_BYTES": str(1024 * 1024)}
    long_line = line(prompt(25, "corpus", "y" * (2 * 1024 * 1024)))
    lines, expected, prompts = corpus(workspace, long_line)
    command = serve_command(one_line_script(tmp_path))
    frames, stderr, code = run_agent_raw(
        lines, env=env, command=command, timeout=30, validate=False
    )
    assert code == 0, stderr.decode(errors="replace")[-2000:]

    transcript = Transcript()
    for frame in frames:
        transcript.feed_agent_output(line(frame))
    validate_frames(transcript, acp_schema)
    responses = [f for f in frames if "method" not in f]
    prompt_answers = [f for f in responses if f.get("id") in prompts]
    others = [f for f in responses if f.get("id") not in prompts]
    got = [(f["id"], "ok" if "result" in f else f["error"]["code"]) for f in others]
    assert got == expected
    assert [(f["id"], f["result"]["stopReason"]) for f in prompt_answers] == [
        (3, "end_turn"),
        (5, "end_turn"),
    ]
    updates = [f["params"]["update"] for f in frames if f.get("method") == "session/update"]
    texts = [u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert texts == ["ok", "ok again"]
    titles = [u["title"] for u in updates if u["sessionUpdate"] == "session_info_update"]
    assert len(titles) == 1  # the session got its title from its first prompt


def vm_kib(pid: int, field: str) -> int:
    """``VmRSS`` / ``VmHWM`` of a process, in KiB (Linux)."""
    for text in Path(f"/proc/{pid}/status").read_text().splitlines():
        if text.startswith(field + ":"):
            return int(text.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


async def test_an_80_mib_line_is_rejected_in_bounded_memory(agent_env: dict[str, str]) -> None:
    env = {**agent_env, "ACP_AGENT_MAX_LINE_BYTES": str(1024 * 1024)}
    async with RawAgent(env=env, timeout=30) as agent:
        await still_serving(agent, 1)  # answered before the server is imported (launch.py)
        await still_serving(agent, 3)  # answered by the router: the imports are done
        baseline = vm_kib(agent.process.pid, "VmRSS")
        huge = b'{"jsonrpc":"2.0","id":60,"method":"initialize","params":{"x":"'
        huge += b"z" * (80 * 1024 * 1024) + b'"}}\n'
        error = assert_error(await answer_to(agent, huge), INVALID_REQUEST, NULL)
        assert error.get("data", {}).get("reason") == "line_too_long", error
        await still_serving(agent, 2)
        peak = vm_kib(agent.process.pid, "VmHWM")
        await finish(agent)
    print(f"80 MiB line: RSS {baseline} KiB before, peak {peak} KiB")
    assert peak - baseline < 16 * 1024, f"peak RSS grew by {(peak - baseline) // 1024} MiB"


async def test_the_default_cap_accepts_a_17_mib_prompt(
    agent_env: dict[str, str], tmp_path: Path, workspace: Path
) -> None:
    command = serve_command(one_line_script(tmp_path))
    async with RawAgent(command, env=agent_env, timeout=30) as agent:
        await agent.request("initialize", INIT)
        created = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        sid = created["result"]["sessionId"]
        text = "w" * (17 * 1024 * 1024)
        answer = await agent.request("session/prompt", prompt(0, sid, text)["params"])
        assert answer["result"]["stopReason"] == "end_turn", answer
        await finish(agent)
