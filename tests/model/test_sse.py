"""The SSE parser: events come out the same however the bytes are cut."""

from __future__ import annotations

import pytest

from acp_agent.model.openai.sse import SseEvent, SseParser
from tests.model.loopback import RECORDINGS


def parse(*chunks: bytes) -> list[SseEvent]:
    parser = SseParser()
    events = [event for chunk in chunks for event in parser.feed(chunk)]
    return events + parser.close()


def test_data_lines_dispatch_at_blank_lines() -> None:
    assert parse(b"data: one\n\ndata: two\n\n") == [SseEvent("one"), SseEvent("two")]


def test_multi_line_data_joins_with_newlines_and_one_leading_space_goes() -> None:
    assert parse(b"data:a\ndata:  b\n\n") == [SseEvent("a\n b")]


def test_comments_ids_retries_and_empty_events_are_skipped() -> None:
    assert parse(b": keep-alive\n\nid: 7\nretry: 10\n\ndata: x\n\n") == [SseEvent("x")]


def test_event_names_are_kept() -> None:
    assert parse(b"event: error\ndata: {}\n\n") == [SseEvent("{}", "error")]


@pytest.mark.parametrize("newline", [b"\r\n", b"\r", b"\n"])
def test_every_line_ending(newline: bytes) -> None:
    body = b"data: a" + newline + newline + b"data: b" + newline + newline
    assert parse(body) == [SseEvent("a"), SseEvent("b")]


def test_a_crlf_split_between_chunks_is_one_line_end() -> None:
    assert parse(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == [SseEvent("a"), SseEvent("b")]


@pytest.mark.parametrize("recording", ["reasoning.sse", "tools-1.sse", "usage.sse"])
def test_any_cut_of_a_recording_gives_the_same_events(recording: str) -> None:
    body = (RECORDINGS / recording).read_bytes()
    whole = parse(body)
    assert whole and whole[-1] == SseEvent("[DONE]")
    for cut in range(1, len(body)):  # includes cuts inside multi-byte characters
        assert parse(body[:cut], body[cut:]) == whole


def test_at_close_a_complete_event_without_its_blank_line_still_counts() -> None:
    assert parse(b"data: a\n\ndata: [DONE]\n") == [SseEvent("a"), SseEvent("[DONE]")]


def test_at_close_a_line_without_its_end_may_be_cut_short_and_is_dropped() -> None:
    assert parse(b'data: a\n\ndata: {"choi') == [SseEvent("a")]


def test_an_empty_data_line_is_an_event_with_empty_data() -> None:
    assert parse(b"data:\n\ndata: x\n\n") == [SseEvent(""), SseEvent("x")]


def test_an_error_field_is_read_as_an_error_event() -> None:
    body = b'error: {"code": 500}\n\ndata: [DONE]\n\n'
    assert parse(body) == [SseEvent('{"code": 500}', "error"), SseEvent("[DONE]")]


def test_a_bare_json_line_is_an_event_of_its_own() -> None:
    body = b'data: a\n{"error": {"message": "x"}}\n\n'
    assert parse(body) == [SseEvent('{"error": {"message": "x"}}', "raw"), SseEvent("a")]
