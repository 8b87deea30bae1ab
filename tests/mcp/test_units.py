"""Names, configs, the permission table and result conversion, without a server."""

from __future__ import annotations

import pytest
from mcp.types import CallToolResult, EmbeddedResource, TextContent, TextResourceContents

from acp_agent.content import EmbeddedResource as AcpResource, JsonObject, TextContent as AcpText
from acp_agent.errors import InvalidParams
from acp_agent.mcp import names
from acp_agent.mcp.client import to_output
from acp_agent.mcp.config import HttpServer, StdioServer, describe, journaled, parse_servers
from acp_agent.tools.permissions import POLICY, Action, Mode, Rule


def test_names_are_sanitized_bounded_and_deduplicated() -> None:
    assert names.assign([("git hub", "search.issues")]) == ["mcp__git_hub__search_issues"]
    long = names.assign([("s", "t" * 100)])[0]
    assert len(long) == 64 and long == names.assign([("s", "t" * 100)])[0]
    assert names.assign([("a b", "x"), ("a.b", "x"), ("a_b", "x")]) == [
        "mcp__a_b__x",
        "mcp__a_b__x_2",
        "mcp__a_b__x_3",
    ]
    assert all(len(n) <= 64 for n in names.assign([("s", "t" * 100)] * 12))
    assert names.split("mcp__srv__tool_name") == ("srv", "tool_name")
    assert names.split("read_file") is None


def test_configs_decode_and_refuse_sse_by_path() -> None:
    stdio: JsonObject = {
        "name": "a",
        "command": "/bin/x",
        "args": ["-v"],
        "env": [{"name": "K", "value": "v"}],
    }
    http: JsonObject = {"type": "http", "name": "b", "url": "http://u:p@h:1/mcp?t=1", "headers": []}
    parsed = parse_servers([stdio, http])
    assert isinstance(parsed[0], StdioServer) and isinstance(parsed[1], HttpServer)
    assert describe(parsed[0]) == {
        "server": "a",
        "transport": "stdio",
        "command": "/bin/x",
        "env": ["K"],
    }
    assert describe(parsed[1])["url"] == "http://h:1/mcp"
    with pytest.raises(InvalidParams) as refused:
        parse_servers([stdio, {**http, "type": "sse"}])
    assert refused.value.data == {"path": "$.mcpServers[1].type"}
    assert journaled([stdio])[0]["env"] == [{"name": "K", "value": "<redacted>"}]


def test_the_permission_table_for_mcp_tools() -> None:
    table = {mode: (POLICY[mode][Action.MCP_READ], POLICY[mode][Action.MCP]) for mode in Mode}
    assert table == {
        Mode.READ_ONLY: (Rule.ALLOW, Rule.REFUSE),
        Mode.PLAN: (Rule.ALLOW, Rule.REFUSE),  # read-only for planning (docs/tools.md)
        Mode.ASK: (Rule.ASK, Rule.ASK),
        Mode.AUTO_EDIT: (Rule.ALLOW, Rule.ASK),
        Mode.FULL_ACCESS: (Rule.ALLOW, Rule.ALLOW),
    }


def test_results_become_acp_blocks() -> None:
    resource = TextResourceContents(uri="file:///a", text="body", mime_type="text/plain")
    result = CallToolResult(
        content=[
            TextContent(type="text", text="hi"),
            EmbeddedResource(type="resource", resource=resource),
        ],
        is_error=True,
    )
    output = to_output(result)
    assert output.is_error
    assert output.content[0] == AcpText(text="hi")
    assert isinstance(output.content[1], AcpResource) and output.content[1].resource.text == "body"
    structured = to_output(CallToolResult(content=[], structured_content={"n": 1}))
    assert structured.content == [AcpText(text='{"n":1}')]
