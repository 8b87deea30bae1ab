"""``x-deserialize-default-on-null`` (issue 14): a null list is the empty list.

The official ACP schema marks some properties so: a client may send ``null`` and means the
default. Every marked property of a request type ``acp_agent/acp/schema.py`` decodes must decode
``null`` as its default; the other marked types are listed with the reason they are not here, so
a schema update that marks a new property fails this test until someone decides.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import msgspec
import pytest

from acp_agent.acp.schema import ForkSessionParams, LoadSessionParams, NewSessionParams
from acp_agent.errors import InvalidParams, decode_params
from tests.support.acp_schema import schema_path

MARKER = "x-deserialize-default-on-null"

DECODED: dict[str, type[msgspec.Struct]] = {
    "NewSessionRequest": NewSessionParams,
    "LoadSessionRequest": LoadSessionParams,
    "ResumeSessionRequest": LoadSessionParams,
    "ForkSessionRequest": ForkSessionParams,
}
NOT_HERE = {
    "CreateTerminalRequest": "sent by the agent (CreateTerminalParams), never decoded",
    "AuthMethodTerminal": "the agent sends auth methods; it never decodes one",
    "McpServerStdio": "an mcpServers item: decoded by acp_agent/mcp/config.py, not here",
    "McpServerHttp": "an mcpServers item: decoded by acp_agent/mcp/config.py, not here",
    "McpServerSse": "an mcpServers item: sse is refused by acp_agent/mcp/config.py",
}
MINIMAL: dict[type[msgspec.Struct], dict[str, Any]] = {
    NewSessionParams: {"cwd": "/w"},
    LoadSessionParams: {"sessionId": "s", "cwd": "/w"},
    ForkSessionParams: {"sessionId": "s", "cwd": "/w"},
}


def marked(schema_file: str) -> set[tuple[str, str]]:
    """(type, property) of every property the schema file marks."""
    defs = json.loads(Path(schema_path().with_name(schema_file)).read_text())["$defs"]
    return {
        (name, prop)
        for name, definition in defs.items()
        for prop, spec in definition.get("properties", {}).items()
        if spec.get(MARKER)
    }


def wire_name(type_: type[msgspec.Struct], prop: str) -> str:
    """The Python field ``type_`` decodes ``prop`` into."""
    fields = msgspec.structs.fields(type_)
    return next(f.name for f in fields if f.encode_name == prop)


ALL_MARKED = sorted(marked("schema.json") | marked("schema.unstable.json"))


def test_every_marked_type_is_decoded_here_or_explained() -> None:
    types = {name for name, _ in ALL_MARKED}
    assert types <= DECODED.keys() | NOT_HERE.keys(), types - DECODED.keys() - NOT_HERE.keys()
    assert {name for name in DECODED if name != "ForkSessionRequest"} <= types


@pytest.mark.parametrize(("type_name", "prop"), [m for m in ALL_MARKED if m[0] in DECODED])
def test_a_marked_property_decodes_null_as_its_default(type_name: str, prop: str) -> None:
    type_ = DECODED[type_name]
    null = decode_params(json.dumps({**MINIMAL[type_], prop: None}).encode(), type_)
    absent = decode_params(json.dumps(MINIMAL[type_]).encode(), type_)
    field = wire_name(type_, prop)
    assert getattr(null, field) == getattr(absent, field) == []


@pytest.mark.parametrize("type_", [NewSessionParams, LoadSessionParams, ForkSessionParams])
def test_both_null_at_once_and_values_as_before(type_: type[msgspec.Struct]) -> None:
    base = MINIMAL[type_]
    both = decode_params(
        json.dumps({**base, "mcpServers": None, "additionalDirectories": None}).encode(), type_
    )
    assert (both.mcp_servers, both.additional_directories) == ([], [])  # type: ignore[attr-defined]
    given = decode_params(
        json.dumps(
            {**base, "mcpServers": [{"name": "a"}], "additionalDirectories": ["/x"]}
        ).encode(),
        type_,
    )
    assert given.mcp_servers == [{"name": "a"}]  # type: ignore[attr-defined]
    assert given.additional_directories == ["/x"]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"mcpServers": 5}, "$.mcpServers"),
        ({"mcpServers": {}}, "$.mcpServers"),
        ({"mcpServers": [None]}, "$.mcpServers[0]"),  # null *items* are not defaulted
        ({"additionalDirectories": "/x"}, "$.additionalDirectories"),
        ({"additionalDirectories": [None]}, "$.additionalDirectories[0]"),
        ({"cwd": None}, "$.cwd"),  # unmarked: null stays an error
    ],
)
def test_other_wrong_shapes_are_still_invalid_params(value: dict[str, Any], path: str) -> None:
    with pytest.raises(InvalidParams) as raised:
        decode_params(json.dumps({"cwd": "/w", **value}).encode(), NewSessionParams)
    assert isinstance(raised.value.data, dict) and raised.value.data["path"] == path


def test_constructing_with_none_is_the_default_too() -> None:
    params = NewSessionParams(cwd="/w", mcp_servers=None, additional_directories=None)  # type: ignore[arg-type]
    assert (params.mcp_servers, params.additional_directories) == ([], [])
    assert msgspec.json.encode(params) == b'{"cwd":"/w"}'
