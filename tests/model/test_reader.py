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
    invalid_arguments,
)
from acp_agent.model.openai.reader import (
    ChatStreamReader,
    EmptyStream,
    IncompleteStream,
    ThinkTags,
)


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


@pytest.mark.parametrize("text", ["[1, 2", '{"path": "a.txt"', "{'path': 'a'}", "[1, 2]"])
def test_arguments_that_are_no_json_object_become_a_malformed_call_the_model_is_told_of(
    text: str,
) -> None:
    events = read(fragment(0, "c1", "f", text), chunk(finish="tool_calls"))
    call = next(e.call for e in events if isinstance(e, ToolCallReady))
    assert call.id == "c1" and call.name == "f"
    told = invalid_arguments(call)
    assert told is not None and "not a JSON object" in told and text in told
    assert invalid_arguments(ToolCallPart("c2", "f", {"path": "a"})) is None


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


@pytest.mark.parametrize("reason", ["insufficient_system_resource", "error"])
def test_a_documented_interruption_fails_the_request(reason: str) -> None:
    with pytest.raises(ModelError, match=f"stopped the answer early: {reason}"):
        read(chunk({"content": "par"}, finish=reason))


def test_an_unknown_finish_reason_ends_the_turn_and_is_logged() -> None:
    with capture_logs() as logs:
        events = read(chunk({"content": "x"}, finish="brand_new_reason"), "[DONE]")
    assert events == [TextDelta("x"), Finish(StopKind.END_TURN)]
    assert [(e["event"], e["reason"]) for e in logs] == [
        ("model_unknown_finish_reason", "brand_new_reason")
    ]


@pytest.mark.parametrize(
    ("reason", "stop"),
    [
        ("end_turn", StopKind.END_TURN),
        ("eos", StopKind.END_TURN),
        ("eos_token", StopKind.END_TURN),
        ("stop_sequence", StopKind.END_TURN),
        ("model_length", StopKind.MAX_TOKENS),
    ],
)
def test_other_servers_finish_reasons(reason: str, stop: StopKind) -> None:
    with capture_logs() as logs:
        assert read(chunk(finish=reason))[-1] == Finish(stop)
    assert logs == []


def test_done_without_finish_reason_ends_the_turn() -> None:
    assert read(chunk({"content": "x"}), "[DONE]") == [TextDelta("x"), Finish()]


def test_a_body_that_ends_before_done_or_a_finish_reason_is_incomplete() -> None:
    with pytest.raises(IncompleteStream, match="closed before the answer was complete"):
        read(chunk({"content": "par"}))


@pytest.mark.parametrize(
    "payloads", [(), (json.dumps({"choices": [], "prompt_filter_results": []}),)]
)
def test_a_body_without_a_single_choice_is_an_empty_stream(payloads: tuple[str, ...]) -> None:
    with pytest.raises(EmptyStream, match="answered 200 with an empty stream"):
        read(*payloads)


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


def test_usage_is_sent_once_at_the_end_the_last_one_wins() -> None:
    first = chunk({"content": "a"}, usage={"prompt_tokens": 3, "completion_tokens": 1})
    last = chunk(finish="stop", usage={"prompt_tokens": 3, "completion_tokens": 2, "cost": 0.5})
    assert read(first, last) == [TextDelta("a"), Usage(3, 2, cost=0.5), Finish()]


def test_groq_usage_under_x_groq() -> None:
    groq = chunk(finish="stop", x_groq={"id": "req_1", "usage": {"prompt_tokens": 7}})
    assert read(groq)[0] == Usage(7, 0)


def test_an_empty_data_payload_is_skipped() -> None:
    assert read("", "  ", chunk({"content": "x"}, finish="stop")) == [TextDelta("x"), Finish()]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ('{"code": 500, "message": "boom", "type": "server_error"}', r"boom \(500\)"),
        ('{"error": {"message": "boom", "type": "server_error"}}', r"boom \(server_error\)"),
        ("model crashed", "model crashed"),
    ],
)
def test_an_error_event_fails_with_the_message_inside(data: str, message: str) -> None:
    reader = ChatStreamReader("p:m")
    with pytest.raises(ModelError, match=f"p:m reported an error: {message}"):
        reader.feed(data, "error")


def test_a_chunk_that_is_an_error_fails() -> None:
    flat = json.dumps({"object": "error", "message": "bad", "type": "BadRequestError", "code": 400})
    with pytest.raises(ModelError, match=r"bad \(400\)"):
        read(flat, "[DONE]")


# -- tool calls -------------------------------------------------------------------------------


def calls_of(*payloads: str) -> list[ToolCallPart]:
    return [
        e.call for e in read(*payloads, chunk(finish="tool_calls")) if isinstance(e, ToolCallReady)
    ]


def test_a_name_in_pieces_is_joined_and_a_repeated_or_growing_name_is_taken_once() -> None:
    pieces = calls_of(fragment(0, "a", "read_"), fragment(0, name="file", args="{}"))
    repeated = calls_of(fragment(0, "a", "read_file", "{"), fragment(0, "a", "read_file", "}"))
    growing = calls_of(fragment(0, "a", "read"), fragment(0, name="read_file", args="{}"))
    assert [c.name for c in (*pieces, *repeated, *growing)] == ["read_file"] * 3


def test_arguments_as_an_object_null_or_sent_again_whole() -> None:
    as_object = chunk(
        {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": {"x": 1}}}]}
    )
    assert calls_of(as_object)[0].arguments == {"x": 1}
    assert calls_of(fragment(0, "a", "f", "null"))[0].arguments == {}
    again = calls_of(fragment(0, "a", "f", '{"x": 1}'), fragment(0, args='{"x": 1}'))
    assert again[0].arguments == {"x": 1}
    nested = calls_of(
        fragment(0, "a", "f", '{"x": '), fragment(0, args='{"y": 2}'), fragment(0, args="}")
    )
    assert nested[0].arguments == {"x": {"y": 2}}


def test_a_new_id_under_the_same_index_opens_a_call_only_when_it_looks_like_one() -> None:
    ollama = calls_of(fragment(0, "a", "f", '{"n": 1}'), fragment(0, "b", "f", '{"n": 2}'))
    assert [(c.id, c.arguments) for c in ollama] == [("a", {"n": 1}), ("b", {"n": 2})]
    unstable_ids = calls_of(fragment(0, "a", "f", '{"n"'), fragment(0, "b", args=": 1}"))
    assert [(c.id, c.arguments) for c in unstable_ids] == [("b", {"n": 1})]


# -- <think> tags -----------------------------------------------------------------------------


def think_split(*pieces: str) -> tuple[str, str]:
    splitter = ThinkTags()
    events = [e for piece in pieces for e in splitter.split(piece)] + splitter.flush()
    thought = "".join(e.text for e in events if isinstance(e, ThoughtDelta))
    return thought, "".join(e.text for e in events if isinstance(e, TextDelta))


THINKING = "Intro <think>\nis a<b? yes</think>\n\nAnswer </thin"


def test_think_tags_split_the_same_wherever_the_content_is_cut() -> None:
    whole = think_split(THINKING)
    assert whole == ("is a<b? yes", "Intro Answer </thin")
    for cut in range(1, len(THINKING)):
        assert think_split(THINKING[:cut], THINKING[cut:]) == whole


def test_think_tags_are_off_by_default() -> None:
    events = read(chunk({"content": "<think>x</think>y"}, finish="stop"))
    assert events == [TextDelta("<think>x</think>y"), Finish()]


def test_think_tags_on_through_the_reader() -> None:
    reader = ChatStreamReader("p:m", think_tags=True)
    events = reader.feed(chunk({"content": "<think>x</th"}))
    events += reader.feed(chunk({"content": "ink>y"}, finish="stop"))
    assert events + reader.end() == [ThoughtDelta("x"), TextDelta("y"), Finish()]


# -- content parts and reasoning details ------------------------------------------------------


def test_content_parts_text_and_thinking() -> None:
    parts = [
        {"type": "thinking", "thinking": [{"type": "text", "text": "hm"}]},
        {"type": "text", "text": "ok"},
        {"type": "image_url", "image_url": {"url": "data:"}},
    ]
    assert read(chunk({"content": parts}, finish="stop")) == [
        ThoughtDelta("hm"),
        TextDelta("ok"),
        Finish(),
    ]


def test_reasoning_details_merge_fragments_of_one_item_only() -> None:
    details = [
        {"type": "reasoning.text", "text": "a", "index": 0},
        {"type": "reasoning.text", "text": "b", "index": 0, "signature": "s"},
        {"type": "reasoning.text", "text": "c", "index": 1},
        "not an object",
        {"type": "reasoning.encrypted", "data": "x", "index": 1},
        {"type": "reasoning.encrypted", "data": "y", "index": 1},
    ]
    finish = read(*(chunk({"reasoning_details": [d]}) for d in details), "[DONE]")[-1]
    assert isinstance(finish, Finish)
    assert [json.loads(bytes(raw)) for raw in finish.reasoning_details] == [
        {"type": "reasoning.text", "text": "ab", "index": 0, "signature": "s"},
        {"type": "reasoning.text", "text": "c", "index": 1},
        {"type": "reasoning.encrypted", "data": "x", "index": 1},
        {"type": "reasoning.encrypted", "data": "y", "index": 1},
    ]
