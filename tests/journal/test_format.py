from __future__ import annotations

import zlib

import pytest
from hypothesis import given, strategies as st

from acp_agent.content import (
    AudioContent,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    ResourceLink,
    TextContent,
)
from acp_agent.journal.events import (
    Entry,
    Event,
    Parent,
    SessionHeader,
    SourceKind,
    StepEnd,
    StepStart,
    TurnStart,
    UnknownEvent,
    UserMessage,
    source,
)
from acp_agent.journal.format import (
    BadLine,
    decode_entry,
    decode_header,
    encode_entry,
    encode_header,
)

from .builders import HEADER, assistant, blocks, call, end, error, result, steering, user


def crc_of(body: bytes) -> bytes:
    return b"%08x" % zlib.crc32(body)


def seal(body: bytes) -> bytes:
    """Seal a hand-written ``{...}`` body the documented way."""
    return body[:-1] + b',"crc":"' + crc_of(body) + b'"}\n'


EVERY_BLOCK: list[ContentBlock] = [
    TextContent(text="t", annotations={"priority": 1}, meta={"k": "v"}),
    ImageContent(data="aGk=", mimeType="image/png"),
    AudioContent(data="aGk=", mimeType="audio/wav"),
    ResourceLink(uri="file:///a.txt", name="a.txt", size=3),
    EmbeddedResource(resource=ResourceContents(uri="file:///b.txt", text="b")),
    EmbeddedResource(resource=ResourceContents(uri="file:///c.bin", blob="Yw==", mimeType="x/y")),
]

ALL_EVENTS: list[Event] = [
    user("hi", kind=SourceKind.CLIENT),
    UserMessage("every-block", EVERY_BLOCK, source(SourceKind.SESSION_REF, sessionId="s0")),
    TurnStart(2),
    StepStart(2, 1),
    assistant(2, 1, "thinking", ["c1", "c2"]),
    call(2, 1, "c1", {"path": "a.txt", "nested": {"n": [1, 2.5, None, True]}}),
    result(2, 1, "c1", error=True),
    steering(2),
    error(2, 1),
    error(2),
    StepEnd(2, 1),
    end(2),
]


# -- the documented shapes -------------------------------------------------------------------


def test_header_line_has_the_documented_keys_in_order_and_a_checksum() -> None:
    body = b'{"type":"session","version":1,"id":"s1","createdAt":1700000000000,"cwd":"/work"}'
    assert encode_header(HEADER) == seal(body)


def test_header_round_trips_with_parent_and_mcp_servers() -> None:
    header = SessionHeader(
        id="fork-1",
        created_at=5,
        cwd="/w",
        parent=Parent(session_id="s1", seq=9),
        mcp_servers=[{"name": "fs", "command": "mcp-fs"}],
    )
    line = encode_header(header)
    assert b'"parent":{"sessionId":"s1","seq":9}' in line
    assert decode_header(line).header == header
    assert decode_header(line).sealed


def test_event_line_is_the_envelope_with_the_checksum_spliced_in_last() -> None:
    line = encode_entry(Entry(seq=3, time=1234, event=TurnStart(2)))
    body = b'{"seq":3,"time":1234,"type":"turn/start","data":{"turn":2}}'
    assert line == seal(body)


@pytest.mark.parametrize("event", ALL_EVENTS, ids=lambda e: type(e).__name__)
def test_every_event_type_round_trips(event: Event) -> None:
    entry = Entry(seq=7, time=99, event=event)
    line = encode_entry(entry)
    assert line.endswith(b"}\n") and line.count(b"\n") == 1
    assert decode_entry(line) == entry
    assert decode_entry(line[:-1]) == entry  # the newline is optional for the codec


json_text = st.text(st.characters(codec="utf-8"), max_size=40)


@given(
    text=json_text,
    msg_id=json_text,
    kind=json_text,
    seq=st.integers(1, 2**53),
    time=st.integers(0, 2**53),
)
def test_user_messages_round_trip_whatever_the_text(
    text: str, msg_id: str, kind: str, seq: int, time: int
) -> None:
    entry = Entry(seq, time, UserMessage(msg_id, blocks(text), source(kind, extra=[1, "x"])))
    line = encode_entry(entry)
    assert b"\x00" not in line  # control characters are escaped, never raw
    assert decode_entry(line) == entry


def test_unknown_type_is_kept_and_re_encoded_byte_for_byte() -> None:
    line = seal(
        b'{"seq":4,"time":5,"type":"session/title","data":{ "title" : "caf\\u00e9",  "n":[1 ,2]}}'
    )
    entry = decode_entry(line)
    assert isinstance(entry.event, UnknownEvent)
    assert entry.event.type == "session/title"
    assert bytes(entry.event.data) == b'{ "title" : "caf\\u00e9",  "n":[1 ,2]}'
    assert encode_entry(entry) == line


# -- verification ----------------------------------------------------------------------------


def test_a_wrong_checksum_is_rejected() -> None:
    line = encode_entry(Entry(1, 2, TurnStart(1)))
    digit = line[-4:-3]
    tampered = line[:-4] + (b"0" if digit != b"0" else b"1") + line[-3:]
    with pytest.raises(BadLine, match="checksum mismatch"):
        decode_entry(tampered)


@pytest.mark.parametrize("mask", [0x01, 0x20, 0x80])
def test_any_single_changed_byte_is_detected(mask: int) -> None:
    line = encode_entry(Entry(12, 3456, user("héllo", kind=SourceKind.HOOK)))
    for index in range(len(line)):
        damaged = bytearray(line)
        damaged[index] ^= mask
        with pytest.raises(BadLine):
            decode_entry(bytes(damaged))


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        (b"", "empty line"),
        (b"\n", "empty line"),
        (b"\x00\x00\x00\x00", "NUL bytes"),
        (b'{"seq":1,"time":2,"type":"turn/start","data":{"turn":1}}\x00\x00', "NUL bytes"),
        (b'{"seq":1,"time":2,"type":"turn/st', "missing checksum"),
        (b"garbage\n", "missing checksum"),
        (b'{"seq":1,"time":2,"type":"turn/start","data":{"turn":1}}', "missing checksum"),
        (seal(b'{"seq":1,"time":2,"type":"turn/start","data":{"turn":1}'), "malformed JSON"),
        (
            seal(b'{"time":2,"type":"turn/start","data":{"turn":1}}'),
            "invalid envelope: Object missing required field `seq`",
        ),
        (seal(b'{"seq":0,"time":2,"type":"turn/start","data":{"turn":1}}'), "invalid envelope"),
        (seal(b'{"seq":1,"time":2,"type":"turn/start"}'), "missing required field `data`"),
        (
            seal(b'{"seq":1,"time":2,"type":"turn/start","data":{"turns":1}}'),
            "invalid turn/start data",
        ),
        (
            seal(b'{"seq":1,"time":2,"type":"turn/start","data":{"turn":"1"}}'),
            "invalid turn/start data",
        ),
        (
            b'{"seq":1,"time":2,"type":"turn/start","data":{"turn":1},"crc":"ZZZZZZZZ"}',
            "malformed checksum",
        ),
    ],
)
def test_bad_lines_say_why(line: bytes, reason: str) -> None:
    with pytest.raises(BadLine, match=reason.replace("`", ".").replace("(", ".")):
        decode_entry(line)


def test_uppercase_checksum_digits_are_not_accepted() -> None:
    line = encode_entry(Entry(1, 2, TurnStart(1)))
    upper = line[:-10] + line[-10:-2].upper() + line[-2:]
    if upper != line:
        with pytest.raises(BadLine):
            decode_entry(upper)


def test_unsealed_lines_are_accepted_only_when_not_required() -> None:
    body = b'{"seq":1,"time":2,"type":"turn/start","data":{"turn":1}}'
    assert decode_entry(body, require_crc=False) == Entry(1, 2, TurnStart(1))
    with pytest.raises(BadLine, match="missing checksum"):
        decode_entry(body)
    misplaced = b'{"seq":1,"crc":"00000000","time":2,"type":"turn/start","data":{"turn":1}}'
    with pytest.raises(BadLine, match="checksum is not the last member"):
        decode_entry(misplaced, require_crc=False)


def test_a_sealed_line_is_verified_even_when_not_required() -> None:
    line = encode_entry(Entry(1, 2, TurnStart(1))).replace(b'"turn":1', b'"turn":2')
    with pytest.raises(BadLine, match="checksum mismatch"):
        decode_entry(line, require_crc=False)


# -- the header ------------------------------------------------------------------------------


def test_a_hand_written_header_without_checksum_reads_as_unsealed() -> None:
    line = b'{"type":"session","version":1,"id":"x","createdAt":1,"cwd":"/"}\n'
    decoded = decode_header(line)
    assert decoded == decode_header(line[:-1])
    assert decoded.header == SessionHeader(id="x", created_at=1, cwd="/")
    assert not decoded.sealed


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b'{"type":"turn","version":1,"id":"x","createdAt":1,"cwd":"/"}', "header type is 'turn'"),
        (
            b'{"type":"session","version":2,"id":"x","createdAt":1,"cwd":"/"}',
            "unsupported journal version 2",
        ),
        (b'{"type":"session","version":1,"createdAt":1,"cwd":"/"}', "invalid header"),
        (b'{"version":1,"id":"x","createdAt":1,"cwd":"/"}', "invalid header"),
        (b'{"seq":1,"time":2,"type":"turn/start","data":{"turn":1}}', "invalid header"),
        (b'{"type":"session",}', "malformed JSON"),
    ],
)
def test_bad_headers_say_why(body: bytes, reason: str) -> None:
    with pytest.raises(BadLine, match=reason):
        decode_header(seal(body))


def test_a_header_with_a_bad_checksum_is_rejected() -> None:
    line = encode_header(HEADER).replace(b'"cwd":"/work"', b'"cwd":"/worm"')
    with pytest.raises(BadLine, match="checksum mismatch"):
        decode_header(line)
