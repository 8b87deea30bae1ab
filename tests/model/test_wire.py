"""The request body: history to Chat Completions messages, one to one, in order."""

from __future__ import annotations

import json
from typing import Any

from acp_agent.content import ContentBlock, ImageContent, ResourceLink, TextContent
from acp_agent.journal.events import SourceKind, TextPart, ThoughtPart, ToolCallPart, source
from acp_agent.model.base import (
    AssistantTurn,
    ModelMessage,
    ModelRequest,
    ToolSpec,
    ToolTurn,
    UserTurn,
)
from acp_agent.model.openai.wire import encode_request


def body(messages: list[ModelMessage], tools: list[ToolSpec] | None = None) -> Any:
    request = ModelRequest("s", 1, 1, messages, tools or [])
    return json.loads(encode_request("m", request))


def user(text: str, kind: SourceKind = SourceKind.USER) -> UserTurn:
    return UserTurn([TextContent(text=text)], source(kind))


def test_consecutive_user_messages_stay_separate_and_in_order() -> None:
    sent = body(
        [
            user("context first", SourceKind.CLIENT),
            user("the prompt"),
            user("hook", SourceKind.HOOK),
        ]
    )
    assert sent["messages"] == [
        {"role": "user", "content": "context first"},
        {"role": "user", "content": "the prompt"},
        {"role": "user", "content": "hook"},
    ]


def test_the_body_streams_with_usage_and_names_the_model_and_tools() -> None:
    spec = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}})
    sent = body([user("hi")], [spec])
    assert sent == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
    }


def test_no_tools_means_no_tools_member() -> None:
    assert "tools" not in body([user("hi")])


def test_assistant_turns_carry_text_and_tool_calls_but_not_thoughts() -> None:
    turn = AssistantTurn(
        [
            ThoughtPart("secret reasoning"),
            TextPart("Let me look."),
            ToolCallPart("call_1", "read_file", {"path": "a.txt"}),
        ]
    )
    result = ToolTurn("call_1", [TextContent(text="alpha")], is_error=False)
    sent = body([user("go"), turn, result])["messages"]
    assert sent[1:] == [
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "alpha"},
    ]
    assert "secret reasoning" not in json.dumps(sent)


def test_tool_calls_without_text_send_null_content_and_failed_results_say_error() -> None:
    turn = AssistantTurn([ToolCallPart("c", "f", {})])
    result = ToolTurn("c", [TextContent(text="no such file")], is_error=True)
    sent = body([user("go"), turn, result])["messages"]
    assert sent[1]["content"] is None
    assert sent[2] == {"role": "tool", "tool_call_id": "c", "content": "Error: no such file"}


def test_an_empty_assistant_turn_is_left_out() -> None:
    sent = body([user("a"), AssistantTurn([ThoughtPart("only thinking")]), user("b")])
    assert [m["role"] for m in sent["messages"]] == ["user", "user"]


def test_images_make_content_parts_other_blocks_become_text() -> None:
    blocks: list[ContentBlock] = [
        TextContent(text="look"),
        ImageContent(data="AAAA", mimeType="image/png"),
        ResourceLink(uri="file:///x.txt", name="x.txt"),
    ]
    sent = body([UserTurn(blocks, source(SourceKind.USER))])
    assert sent["messages"][0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        {"type": "text", "text": "[file:///x.txt]"},
    ]


def test_text_only_blocks_are_one_string() -> None:
    blocks: list[ContentBlock] = [TextContent(text="a"), ResourceLink(uri="file:///y", name="y")]
    assert body([UserTurn(blocks, source(SourceKind.USER))])["messages"][0]["content"] == (
        "a\n[file:///y]"
    )
