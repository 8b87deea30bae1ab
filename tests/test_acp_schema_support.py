"""The schema validator itself: it must accept good agent frames and reject bad ones."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.acp_schema import (
    AcpSchema,
    FrameValidationError,
    SchemaMissingError,
    schema_path,
    validate_agent_frame,
)

SESSION = "sess-1"


def update(body: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": SESSION, "update": body},
    }


def result(value: Any, request_id: int | str = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


TEXT = {"type": "text", "text": "hi"}

GOOD: list[tuple[str, dict[str, Any], str | None]] = [
    (
        "initialize",
        result({"protocolVersion": 1, "agentCapabilities": {"loadSession": True}}),
        "initialize",
    ),
    ("session/new", result({"sessionId": SESSION}, "abc"), "session/new"),
    ("session/load", result({}), "session/load"),
    ("prompt end_turn", result({"stopReason": "end_turn"}), "session/prompt"),
    ("prompt cancelled", result({"stopReason": "cancelled"}), "session/prompt"),
    ("message chunk", update({"sessionUpdate": "agent_message_chunk", "content": TEXT}), None),
    (
        "chunk with messageId and _meta",
        update(
            {
                "sessionUpdate": "agent_thought_chunk",
                "content": TEXT,
                "messageId": "m-1",
                "_meta": {"x": 1},
            }
        ),
        None,
    ),
    (
        "tool_call",
        update(
            {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "status": "pending"}
        ),
        None,
    ),
    (
        "tool_call_update",
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
        None,
    ),
    (
        "permission request",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "session/request_permission",
            "params": {
                "sessionId": SESSION,
                "toolCall": {"toolCallId": "t1"},
                "options": [{"optionId": "a", "name": "Allow", "kind": "allow_once"}],
            },
        },
        None,
    ),
    (
        "fs read request",
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "fs/read_text_file",
            "params": {"sessionId": SESSION, "path": "/tmp/x"},
        },
        None,
    ),
    (
        "parse error with null id",
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        None,
    ),
    (
        "method not found",
        {"jsonrpc": "2.0", "id": 4, "error": {"code": -32601, "message": "Method not found"}},
        "session/set_mode",
    ),
    ("extension response", result({"anything": [1, 2]}), "_session/steering"),
    ("extension request", {"jsonrpc": "2.0", "id": 9, "method": "_x/y", "params": {}}, None),
    ("extension notification", {"jsonrpc": "2.0", "method": "_x/note"}, None),
]

BAD: list[tuple[str, dict[str, Any], str | None, str]] = [
    (
        "unknown sessionUpdate",
        update({"sessionUpdate": "agent_message", "content": TEXT}),
        None,
        "'agent_message' is not one of",
    ),
    ("stopReason done", result({"stopReason": "done"}), "session/prompt", "'done' is not one of"),
    (
        "tool_call without toolCallId",
        update({"sessionUpdate": "tool_call", "title": "Read"}),
        None,
        "'toolCallId' is a required property",
    ),
    (
        "bad tool status",
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "running"}),
        None,
        "'running' is not one of",
    ),
    (
        "content block without text",
        update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text"}}),
        None,
        "'text' is a required property",
    ),
    (
        "session/new without sessionId",
        result({"modes": None}),
        "session/new",
        "'sessionId' is a required property",
    ),
    ("null result for session/load", result(None), "session/load", "not of type 'object'"),
    (
        "protocolVersion beyond uint16",
        result({"protocolVersion": 70000}),
        "initialize",
        "is not a 'uint16'",
    ),
    ("no jsonrpc", {"id": 1, "result": {}}, None, '"jsonrpc" must be "2.0"'),
    ("jsonrpc 1.0", {"jsonrpc": "1.0", "id": 1, "result": {}}, None, '"jsonrpc" must be "2.0"'),
    (
        "result and error",
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": -32603, "message": "x"}},
        None,
        "exactly one of result and error",
    ),
    ("neither result nor error", {"jsonrpc": "2.0", "id": 1}, None, "exactly one of"),
    ("neither method nor id", {"jsonrpc": "2.0", "result": {}}, None, "neither method nor id"),
    (
        "extra root member",
        {**result({"stopReason": "end_turn"}), "stopReason": "end_turn"},
        "session/prompt",
        "outside JSON-RPC 2.0",
    ),
    (
        "null id on a result",
        {"jsonrpc": "2.0", "id": None, "result": {}},
        None,
        "id must not be null",
    ),
    ("boolean id", {"jsonrpc": "2.0", "id": True, "result": {}}, None, "integer or a string"),
    (
        "error without message",
        {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603}},
        None,
        "'message' is a required property",
    ),
    (
        "unknown client method",
        {"jsonrpc": "2.0", "id": 1, "method": "fs/delete", "params": {}},
        None,
        "no ACP v1 client request",
    ),
    (
        "session/update sent as a request",
        {**update({"sessionUpdate": "agent_message_chunk", "content": TEXT}), "id": 3},
        None,
        "no ACP v1 client request",
    ),
    (
        "answer to a notification",
        result({}),
        "session/cancel",
        "no ACP v1 agent request",
    ),
    (
        "permission request without toolCall",
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "session/request_permission",
            "params": {"sessionId": SESSION, "options": []},
        },
        None,
        "'toolCall' is a required property",
    ),
    (
        "id beyond int64",
        {"jsonrpc": "2.0", "id": 2**64, "result": {}},
        None,
        "is not a 'int64'",
    ),
]


@pytest.mark.parametrize(
    ("frame", "method"), [(f, m) for _, f, m in GOOD], ids=[g[0] for g in GOOD]
)
def test_accepts_valid_agent_frames(
    acp_schema: AcpSchema, frame: dict[str, Any], method: str | None
) -> None:
    acp_schema.validate_agent_frame(frame, method)


@pytest.mark.parametrize(
    ("frame", "method", "reason"), [b[1:] for b in BAD], ids=[b[0] for b in BAD]
)
def test_rejects_invalid_agent_frames(
    acp_schema: AcpSchema, frame: dict[str, Any], method: str | None, reason: str
) -> None:
    with pytest.raises(FrameValidationError) as caught:
        acp_schema.validate_agent_frame(frame, method)
    assert reason in str(caught.value)


def test_method_tables_come_from_the_schema(acp_schema: AcpSchema) -> None:
    methods = acp_schema.methods
    assert methods.responses["initialize"] == "InitializeResponse"
    assert methods.responses["session/new"] == "NewSessionResponse"
    assert methods.responses["session/load"] == "LoadSessionResponse"
    assert methods.responses["session/prompt"] == "PromptResponse"
    assert methods.requests["session/request_permission"] == "RequestPermissionRequest"
    assert methods.requests["fs/read_text_file"] == "ReadTextFileRequest"
    assert methods.notifications == {
        "session/update": "SessionNotification",
        "elicitation/complete": "CompleteElicitationNotification",
    }
    # Client -> agent notifications are never something the agent answers or sends.
    assert "session/cancel" not in methods.responses
    assert "session/cancel" not in methods.notifications


def test_without_the_method_a_result_is_only_checked_loosely(acp_schema: AcpSchema) -> None:
    # A response does not name its method: only the caller knows which type its result is.
    acp_schema.validate_agent_frame(result({"stopReason": "done"}))
    with pytest.raises(FrameValidationError):
        acp_schema.validate_agent_frame(result({"stopReason": "done"}), "session/prompt")


def test_check_type_validates_any_definition(acp_schema: AcpSchema) -> None:
    acp_schema.check_type("end_turn", "StopReason")
    with pytest.raises(FrameValidationError, match="'done' is not one of"):
        acp_schema.check_type("done", "StopReason")
    with pytest.raises(KeyError):
        acp_schema.check_type({}, "NoSuchType")


def test_module_level_validator_uses_the_installed_schema(acp_schema: AcpSchema) -> None:
    validate_agent_frame(result({"stopReason": "refusal"}), "session/prompt")
    with pytest.raises(FrameValidationError):
        validate_agent_frame(result({"stopReason": "done"}), "session/prompt")


def test_missing_schema_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "schema.json"
    monkeypatch.setenv("ACP_SCHEMA_PATH", str(missing))
    assert schema_path() == missing
    with pytest.raises(SchemaMissingError, match="make install"):
        AcpSchema.load()


def test_schema_path_override_is_used(
    acp_schema: AcpSchema, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert acp_schema.source is not None
    copy = tmp_path / "schema.json"
    copy.write_bytes(acp_schema.source.read_bytes())
    monkeypatch.setenv("ACP_SCHEMA_PATH", str(copy))
    assert AcpSchema.load().source == copy
