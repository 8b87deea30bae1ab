"""The request body: history to Chat Completions messages, one to one, in order."""

from __future__ import annotations

import json
from typing import Any

import msgspec

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
from acp_agent.model.openai.settings import WireOptions
from acp_agent.model.openai.wire import encode_parts, encode_request

READ = ToolSpec("read_file", "Read a file", {"type": "object", "properties": {}})


def body(
    messages: list[ModelMessage],
    tools: list[ToolSpec] | None = None,
    options: WireOptions | None = None,
    *,
    effort: str | None = None,
    max_tokens: int | None = None,
) -> Any:
    request = ModelRequest("s", 1, 1, messages, tools or [], reasoning_effort=effort)
    return json.loads(encode_request("m", request, options, max_tokens))


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


def test_tool_calls_without_text_send_empty_content_and_failed_results_say_error() -> None:
    # "" rather than null: llama-cpp-python's server answers 500 to a null content (issue 13).
    turn = AssistantTurn([ToolCallPart("c", "f", {})])
    result = ToolTurn("c", [TextContent(text="no such file")], is_error=True)
    sent = body([user("go"), turn, result])["messages"]
    assert sent[1]["content"] == ""
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


# -- what goes back with an assistant message ---------------------------------------------------

ECHO = WireOptions(reasoning_echo=True)


def thinking_turn(*parts: ThoughtPart | TextPart | ToolCallPart) -> AssistantTurn:
    return AssistantTurn(list(parts))


def test_reasoning_echo_sends_the_thought_of_a_tool_call_turn_as_reasoning_content() -> None:
    # DeepSeek thinking mode, "Tool Calls": a turn that called tools must come back with its
    # reasoning_content in every later request (https://api-docs.deepseek.com/guides/thinking_mode).
    turn = thinking_turn(
        ThoughtPart("I should "),
        ThoughtPart("read a.txt."),
        ToolCallPart("c", "read_file", {"path": "a.txt"}),
    )
    result = ToolTurn("c", [TextContent(text="alpha")], is_error=False)
    sent = body([user("go"), turn, result], [READ], ECHO)["messages"]
    assert sent[1]["reasoning_content"] == "I should read a.txt."  # joined as streamed
    assert sent[1]["content"] == ""
    assert "reasoning_content" not in body([user("go"), turn, result], [READ])["messages"][1]


def test_an_empty_thought_beside_tool_calls_is_still_sent_and_answers_carry_none() -> None:
    # A tool-call turn without any thought (thinking disabled, or DeepSeek skipping it) still
    # needs the field: omitting it is the 400 (deepseek-ai/deepseek-harness discussion #739).
    calls = thinking_turn(ToolCallPart("c", "f", {}))
    answer = thinking_turn(ThoughtPart("done thinking"), TextPart("Done."))
    result = ToolTurn("c", [TextContent(text="x")], is_error=False)
    sent = body([user("go"), calls, result, answer, user("next")], [READ], ECHO)["messages"]
    assert sent[1]["reasoning_content"] == ""
    # Between two user messages without tool calls the thought is not needed (the guide:
    # "it will be ignored"): only tool-call turns carry it.
    assert sent[3] == {"role": "assistant", "content": "Done."}


def test_reasoning_details_go_back_verbatim_unless_turned_off() -> None:
    # OpenRouter, "Preserving Reasoning Blocks": pass reasoning_details back unmodified
    # (https://openrouter.ai/docs/use-cases/reasoning-tokens).
    detail = b'{"type":"reasoning.text","text":"plan","signature":"sig==","index":0}'
    turn = AssistantTurn([TextPart("Reading."), ToolCallPart("c", "f", {})], (msgspec.Raw(detail),))
    raw = encode_request("m", ModelRequest("s", 1, 1, [user("go"), turn], []))
    assert b'"reasoning_details":[' + detail + b"]" in raw
    off = WireOptions(reasoning_details_echo=False)
    assert "reasoning_details" not in body([user("go"), turn], [], off)["messages"][1]


# -- request options ----------------------------------------------------------------------------


def test_the_thinking_level_is_sent_as_reasoning_effort_or_nested_for_openrouter() -> None:
    # OpenAI: reasoning_effort none/minimal/low/medium/high/xhigh
    # (https://platform.openai.com/docs/api-reference/chat/create); DeepSeek takes the same
    # field (low/high/max, medium mapped to high: guides/thinking_mode); OpenRouter also takes
    # reasoning: {effort} (https://openrouter.ai/docs/use-cases/reasoning-tokens).
    assert body([user("hi")], effort="low")["reasoning_effort"] == "low"
    assert "reasoning_effort" not in body([user("hi")])
    nested = body(
        [user("hi")], options=WireOptions(reasoning_effort_field="reasoning.effort"), effort="high"
    )
    assert nested["reasoning"] == {"effort": "high"} and "reasoning_effort" not in nested


def test_deepseek_thinking_switch_is_a_body_field() -> None:
    # OpenAI format: {"thinking": {"type": "enabled/disabled"}} (guides/thinking_mode).
    assert body([user("hi")], options=WireOptions(thinking="disabled"))["thinking"] == {
        "type": "disabled"
    }
    assert "thinking" not in body([user("hi")])


def test_tool_choice_is_sent_only_beside_tools() -> None:
    options = WireOptions(tool_choice="required")
    assert body([user("hi")], [READ], options)["tool_choice"] == "required"
    assert "tool_choice" not in body([user("hi")], [], options)
    assert "tool_choice" not in body([user("hi")], [READ])


def test_the_output_bound_goes_out_under_the_configured_name() -> None:
    assert body([user("hi")], max_tokens=100)["max_tokens"] == 100
    completion = body(
        [user("hi")], options=WireOptions(max_tokens_field="max_completion_tokens"), max_tokens=100
    )
    assert completion["max_completion_tokens"] == 100 and "max_tokens" not in completion


def test_the_token_estimate_is_encoded_characters_over_four_rounded_up() -> None:
    request = ModelRequest("s", 1, 1, [user("é" * 10)], [READ], system="sys")
    parts = encode_parts(request)
    chars = len(parts.messages.decode()) + len((parts.tools or b"").decode())
    assert parts.estimated_tokens == -(-chars // 4)
    assert len(parts.messages) > len(parts.messages.decode())  # characters, not bytes
