"""From ``chat.completion.chunk`` payloads to stream events (no HTTP)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from structlog.testing import capture_logs

from acp_agent.journal.events import ToolCallPart
from acp_agent.model.base import (
    Finish,
    ModelError,
    StopKind,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
    Usage,
)
from acp_agent.model.openai.reader import ChatStreamReader, IncompleteStream


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> str:
    choice = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return json.dumps({"choices": [choice], **extra})


def read(*payloads: str) -> list[StreamEvent]:
    reader = ChatStreamReader("p:m")
    events = [event for payload in payloads for event in reader.feed(payload)]
    return events + reader.end()


def test_text_and_reasoning_in_arrival_order() -> None:
    events = read(
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "hmm"}),
        chunk({"reasoning": " ok"}),
        chunk({"content": "hi"}),
        chunk(finish="stop"),
        "[DONE]",
    )
    assert events == [ThoughtDelta("hmm"), ThoughtDelta(" ok"), TextDelta("hi"), Finish()]


def fragment(index: int | None, call_id: str | None = None, name: str = "", args: str = "") -> str:
    call: dict[str, Any] = {"function": {"name": name, "arguments": args}}
    if index is not None:
        call["index"] = index
    if call_id is not None:
        call["id"] = call_id
    return chunk({"tool_calls": [call]})


def test_interleaved_fragments_assemble_into_one_batch_in_index_order() -> None:
    events = read(
        fragment(1, "b", "second", '{"n":'),
        fragment(0, "a", "first", ""),
        fragment(1, args=" 2}"),
        fragment(0, args='{"n": 1}'),
        chunk(finish="tool_calls"),
        "[DONE]",
    )
    assert events == [
        ToolCallReady(ToolCallPart("a", "first", {"n": 1})),
        ToolCallReady(ToolCallPart("b", "second", {"n": 2})),
        Finish(StopKind.END_TURN),
    ]


def test_fragments_without_index_follow_their_ids() -> None:
    events = read(
        fragment(None, "a", "first", "{}"),
        fragment(None, "b", "second", '{"x"'),
        fragment(None, args=": 1}"),
        chunk(finish="tool_calls"),
    )
    calls = [e.call for e in events if isinstance(e, ToolCallReady)]
    assert calls == [ToolCallPart("a", "first", {}), ToolCallPart("b", "second", {"x": 1})]


def test_a_call_without_arguments_gets_an_empty_object_and_one_without_id_gets_an_id() -> None:
    events = read(fragment(0, None, "noargs"), chunk(finish="tool_calls"))
    call = next(e.call for e in events if isinstance(e, ToolCallReady))
    assert call.arguments == {} and call.id.startswith("call_")


def test_arguments_that_are_no_json_object_fail_naming_the_call() -> None:
    with pytest.raises(ModelError, match=r"tool call c1 \(f\)"):
        read(fragment(0, "c1", "f", "[1, 2"), chunk(finish="tool_calls"))


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("stop", StopKind.END_TURN),
        ("tool_calls", StopKind.END_TURN),
        ("length", StopKind.MAX_TOKENS),
        ("content_filter", StopKind.END_TURN),
    ],
)
def test_finish_reasons_map_to_stop_kinds(reason: str, stop: StopKind) -> None:
    assert read(chunk(finish=reason), "[DONE]")[-1] == Finish(stop)


def test_a_filtered_answer_is_logged() -> None:
    with capture_logs() as logs:
        read(chunk(finish="content_filter"))
    assert [entry["event"] for entry in logs] == ["model_content_filtered"]


def test_an_unknown_finish_reason_fails_the_request() -> None:
    with pytest.raises(ModelError, match="insufficient_system_resource"):
        read(chunk({"content": "par"}, finish="insufficient_system_resource"))


def test_done_without_finish_reason_ends_the_turn() -> None:
    assert read(chunk({"content": "x"}), "[DONE]") == [TextDelta("x"), Finish()]


def test_a_body_that_ends_before_done_or_a_finish_reason_is_incomplete() -> None:
    with pytest.raises(IncompleteStream):
        read(chunk({"content": "par"}))


def test_usage_openai_style_and_deepseek_style() -> None:
    openai = json.dumps(
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 8},
                "completion_tokens_details": {"reasoning_tokens": 3},
            },
        }
    )
    deepseek = chunk(
        finish="stop",
        usage={"prompt_tokens": 4, "completion_tokens": 2, "prompt_cache_hit_tokens": 1},
    )
    assert read(chunk(finish="stop"), openai)[0] == Usage(10, 5, 3, 8)
    assert read(deepseek)[0] == Usage(4, 2, None, 1)


def test_an_error_chunk_fails_with_its_message() -> None:
    error = json.dumps({"error": {"message": "overloaded", "code": "server_error"}})
    with pytest.raises(ModelError, match=r"overloaded \(server_error\)"):
        read(chunk({"content": "x"}), error)


def test_an_unreadable_chunk_fails() -> None:
    with pytest.raises(ModelError, match="unreadable stream chunk"):
        read('{"choices": [')


def test_choices_other_than_the_first_are_ignored() -> None:
    other = json.dumps({"choices": [{"index": 1, "delta": {"content": "no"}}]})
    assert read(other, chunk({"content": "yes"}, finish="stop")) == [TextDelta("yes"), Finish()]
