"""``decode_entry`` decodes a known event's line in one pass (a decoder tagged by ``type``) and
falls back to the two passes (envelope, then ``data`` by ``type``) for anything else. The one
pass must accept and refuse exactly the lines the two passes do, and decode them to equal
entries (``format.py``, "Decoding"; ``docs/benchmarks.md``, "Replay <= 2.5x raw decoding")."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from acp_agent.journal.events import Entry, Event, SourceKind, UserMessage, source
from acp_agent.journal.format import BadLine, _decode_in_two_passes, decode_entry, encode_entry

from .builders import user
from .test_format import ALL_EVENTS, EVERY_BLOCK

_MEMBER = len(b',"crc":"12345678"}\n')


def unsealed(event: Event, seq: int = 7) -> bytes:
    """The line of ``event`` without its checksum member (``{...}``), so a changed byte is
    not caught by the checksum before the decoders see it."""
    return encode_entry(Entry(seq, 1_700_000_000_000, event))[:-_MEMBER] + b"}"


def outcome(decode: object, line: bytes) -> Entry | str:
    try:
        return decode(line)  # type: ignore[operator,no-any-return]
    except BadLine as bad:
        return f"BadLine: {bad.reason}"


def one_pass(line: bytes) -> Entry:
    return decode_entry(line, require_crc=False)


def two_passes(line: bytes) -> Entry:
    return _decode_in_two_passes(line, sealed=False)


EVENTS = [*ALL_EVENTS, user("blocks"), user("x" * 300)]


@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_type_decodes_alike_in_one_pass_and_in_two(event: Event) -> None:
    line = unsealed(event)
    assert one_pass(line) == two_passes(line) == Entry(7, 1_700_000_000_000, event)
    sealed = encode_entry(Entry(7, 1_700_000_000_000, event))
    assert decode_entry(sealed) == one_pass(line)


@settings(max_examples=400, deadline=None)
@given(
    event=st.sampled_from(EVENTS),
    position=st.floats(0, 1, exclude_max=True),
    byte=st.integers(0, 255).filter(lambda b: b not in (0, 10)),
)
def test_a_changed_byte_is_accepted_or_refused_alike(
    event: Event, position: float, byte: int
) -> None:
    line = bytearray(unsealed(event))
    line[int(position * len(line))] = byte
    changed = bytes(line)
    assert outcome(one_pass, changed) == outcome(two_passes, changed)


@pytest.mark.parametrize(
    "line",
    [
        b'{"seq":0,"time":1,"type":"turn/start","data":{"turn":1}}',  # seq < 1
        b'{"seq":1,"time":1,"type":"turn/start","data":{"turn":"1"}}',
        b'{"seq":1,"time":1,"type":"no/such","data":{"a":[1]}}',  # kept as UnknownEvent
        b'{"seq":1,"time":1,"data":{"turn":1},"type":"turn/start"}',  # type after data
        b'{"seq":1,"time":1,"type":"turn/start","data":{"turn":1},"extra":1}',
        b'{"seq":1,"time":1,"type":"turn/start","crc":"00000000","data":{"turn":1}}',
        b'{"seq":1,"time":1,"type":"turn/start"}',
        b'{"seq":1,"time":1,"type":7,"data":{}}',
    ],
)
def test_edge_lines_decode_alike(line: bytes) -> None:
    assert outcome(one_pass, line) == outcome(two_passes, line)


def test_every_block_kind_survives_the_one_pass() -> None:

    event = UserMessage("m", EVERY_BLOCK, source(SourceKind.USER))
    assert one_pass(unsealed(event)).event == event


def test_invalid_utf8_in_data_is_a_bad_line_not_a_crash() -> None:
    # reliability.md: every bad input gets a clear error. The envelope pass keeps ``data``
    # raw without checking its UTF-8, so the typed pass is where it is found.
    line = b'{"seq":1,"time":1,"type":"user/message","data":{"id":"\xff"}}'
    for decode in (one_pass, two_passes):
        with pytest.raises(BadLine, match="malformed JSON in user/message data"):
            decode(line)
