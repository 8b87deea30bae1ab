"""The journal's line codec: one JSON object per line, each sealed with a CRC-32.

Theory of operation
-------------------
Line 1 is the header, every later line one event::

    {"type":"session","version":1,"id":"s1","createdAt":1700000000000,"cwd":"/w","crc":"1a2b3c4d"}
    {"seq":1,"time":1700000000001,"type":"user/message","data":{...},"crc":"0badf00d"}

The checksum is the last member, always written as ``,"crc":"xxxxxxxx"}`` (8 lowercase hex
digits of ``zlib.crc32``). It covers the exact bytes of the line *without* that member: to
write, encode ``{...}`` and splice the member in before the final ``}``; to verify, slice the
fixed-size 18-byte member off the end, put the ``}`` back and compare. No re-encoding, so it
is cheap, and any single changed byte anywhere in the line is detected (the member's own bytes
included: a damaged member no longer has the fixed shape, so the line has no valid checksum).

Decoding a known event is one pass: a decoder of the envelope tagged by ``type``, ``data``
typed (about a tenth off a ``session/load``'s parse). Any line it refuses is decoded again in
two passes with reused decoders: the envelope once, keeping ``data`` as ``msgspec.Raw``, then
the typed decoder chosen by ``type`` from a table. That is where an unknown ``type`` becomes
``UnknownEvent`` holding the raw ``data`` bytes, which encode back byte for byte, and where a
bad line gets its reason; both ways accept the same lines (``tests/journal/test_one_pass.py``).

Checksums are mandatory in every journal this project writes: its header carries one, and a
journal whose header is sealed must have a sealed line everywhere (``require_crc``). The
contract (``docs/contract.md`` §2) makes the checksum an optional extra key, so a hand-written
journal whose header has no ``crc`` is read leniently: a line's checksum is verified when present.

If you change the line shape, change ``reader.py`` (which relies on lines being
``\\n``-terminated and on the checksum being the last member) and the tests' golden lines.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Annotated, Any, Final, Union

import msgspec

from acp_agent.content import JsonObject
from acp_agent.journal.events import (
    EVENT_TYPES,
    Entry,
    Event,
    Parent,
    SessionHeader,
    UnknownEvent,
    event_type,
)

HEADER_TYPE: Final = "session"
FORMAT_VERSION: Final = 1

_CRC_KEY: Final = b',"crc":"'
_CRC_MEMBER_LEN: Final = len(_CRC_KEY) + 8 + 2  # ,"crc":"  xxxxxxxx  "}
_HEX: Final = frozenset(b"0123456789abcdef")
_COPY_BELOW: Final = 64 * 1024


class BadLine(ValueError):
    """A line that is not a valid journal line; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class HeaderLine(msgspec.Struct, frozen=True):
    header: SessionHeader
    sealed: bool
    """Whether the header carried a checksum (then every event line must carry one too)."""


# -- wire shapes --------------------------------------------------------------------------


class _Header(msgspec.Struct, frozen=True, omit_defaults=True, rename="camel"):
    """The header line in its documented key order; ``SessionHeader`` is the domain value."""

    type: str
    version: int
    id: str
    created_at: int
    cwd: str
    parent: Parent | None = None
    mcp_servers: list[JsonObject] | None = None
    crc: str | None = None


class _LineOut(msgspec.Struct, frozen=True):
    seq: int
    time: int
    type: str
    data: object


class _LineIn(msgspec.Struct, frozen=True):
    seq: Annotated[int, msgspec.Meta(ge=1)]
    time: int
    type: str
    data: msgspec.Raw
    crc: str | None = None


def _typed_line(name: str, cls: type[Event]) -> type[msgspec.Struct]:
    """``_LineIn`` with ``data`` decoded as ``cls``, tagged by ``type``: one decoder pass."""
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [
        ("seq", Annotated[int, msgspec.Meta(ge=1)]),
        ("time", int),
        ("data", cls),
        ("crc", str | None, None),
    ]
    return msgspec.defstruct(
        f"_Line{cls.__name__}", fields, tag=name, tag_field="type", frozen=True, gc=False
    )


_encoder: Final = msgspec.json.Encoder()
_header_decoder: Final = msgspec.json.Decoder(_Header)
_line_decoder: Final = msgspec.json.Decoder(_LineIn)
_DATA_DECODERS: Final[dict[str, Callable[[msgspec.Raw], Event]]] = {
    str(name): msgspec.json.Decoder(cls).decode for name, cls in EVENT_TYPES.items()
}
_TYPED_LINES: Final = tuple(_typed_line(str(name), cls) for name, cls in EVENT_TYPES.items())
typed_line_decoder: Final = msgspec.json.Decoder(Union[_TYPED_LINES])  # noqa: UP007 (a tuple of types)
"""The one-pass decoder of a known event's line (``decode_entry``; ``bulk.py`` decodes a whole
journal with it)."""


# -- checksum -----------------------------------------------------------------------------


def _seal(body: bytes) -> bytes:
    """``{...}`` -> ``{...,"crc":"xxxxxxxx"}\\n``."""
    return b'%s,"crc":"%08x"}\n' % (body[:-1], zlib.crc32(body))


def _seal_status(line: bytes) -> bool:
    """True when ``line`` ends with a checksum member that verifies; False when it has none.

    Raises ``BadLine`` when the member is there but wrong.
    """
    if line[-_CRC_MEMBER_LEN:-10] != _CRC_KEY or len(line) <= _CRC_MEMBER_LEN:
        return False
    # A copy of a short body is cheaper than a memoryview of it (about a third of the time,
    # per line of a session/load); a long one is not copied.
    body = (
        line[:-_CRC_MEMBER_LEN] if len(line) < _COPY_BELOW else memoryview(line)[:-_CRC_MEMBER_LEN]
    )
    body_crc = zlib.crc32(b"}", zlib.crc32(body))
    if line[-10:] == b'%08x"}' % body_crc:  # the digits and the member's end, in one compare
        return True
    digits = line[-10:-2]
    if line[-2:] != b'"}' or not _HEX.issuperset(digits):
        raise BadLine("malformed checksum")
    raise BadLine(f"checksum mismatch (line says {digits.decode()}, bytes give {body_crc:08x})")


def _strip(line: bytes, nul_free: bool = False) -> bytes:
    line = line[:-1] if line.endswith(b"\n") else line
    if not line:
        raise BadLine("empty line")
    if not nul_free and b"\x00" in line:
        raise BadLine("NUL bytes")
    return line


# -- header -------------------------------------------------------------------------------


def encode_header(header: SessionHeader) -> bytes:
    wire = _Header(
        type=HEADER_TYPE,
        version=FORMAT_VERSION,
        id=header.id,
        created_at=header.created_at,
        cwd=header.cwd,
        parent=header.parent,
        mcp_servers=header.mcp_servers,
    )
    return _seal(_encoder.encode(wire))


def decode_header(line: bytes) -> HeaderLine:
    line = _strip(line)
    sealed = _seal_status(line)
    try:
        wire = _header_decoder.decode(line)
    except msgspec.ValidationError as exc:
        raise BadLine(f"invalid header: {exc}") from None
    except msgspec.DecodeError as exc:
        raise BadLine(f"malformed JSON: {exc}") from None
    if not sealed and wire.crc is not None:
        raise BadLine("checksum is not the last member")
    if wire.type != HEADER_TYPE:
        raise BadLine(f"header type is {wire.type!r}, expected {HEADER_TYPE!r}")
    if wire.version != FORMAT_VERSION:
        raise BadLine(f"unsupported journal version {wire.version}")
    header = SessionHeader(
        id=wire.id,
        created_at=wire.created_at,
        cwd=wire.cwd,
        parent=wire.parent,
        mcp_servers=wire.mcp_servers,
    )
    return HeaderLine(header=header, sealed=sealed)


# -- events -------------------------------------------------------------------------------


def encode_entry(entry: Entry) -> bytes:
    event = entry.event
    data = event.data if isinstance(event, UnknownEvent) else event
    return _seal(_encoder.encode(_LineOut(entry.seq, entry.time, event_type(event), data)))


def decode_entry(line: bytes, *, require_crc: bool = True, nul_free: bool = False) -> Entry:
    """``nul_free``: the caller found no NUL byte in the buffer ``line`` comes from (one
    search of a whole journal instead of one per line)."""
    line = _strip(line, nul_free)
    sealed = _seal_status(line)
    if require_crc and not sealed:
        raise BadLine("missing checksum")
    try:
        typed: Any = typed_line_decoder.decode(line)
    except msgspec.DecodeError:  # its ValidationError too: an unknown type, or a bad line
        return _decode_in_two_passes(line, sealed)
    if not sealed and typed.crc is not None:
        raise BadLine("checksum is not the last member")
    return Entry(typed.seq, typed.time, typed.data)


def _decode_in_two_passes(line: bytes, sealed: bool) -> Entry:
    """The envelope, then its ``data`` by ``type``: an ``UnknownEvent`` for a type this
    version does not know, and the reason a bad line is bad (the one-pass decode of a known
    type accepts and refuses exactly the same lines, in one pass instead of two)."""
    envelope = _decode_envelope(line)
    if not sealed and envelope.crc is not None:
        raise BadLine("checksum is not the last member")
    return Entry(envelope.seq, envelope.time, _decode_event(envelope))


def _decode_envelope(line: bytes) -> _LineIn:
    try:
        return _line_decoder.decode(line)
    except msgspec.ValidationError as exc:
        raise BadLine(f"invalid envelope: {exc}") from None
    except msgspec.DecodeError as exc:
        raise BadLine(f"malformed JSON: {exc}") from None


def _decode_event(envelope: _LineIn) -> Event:
    decode = _DATA_DECODERS.get(envelope.type)
    if decode is None:
        return UnknownEvent(type=envelope.type, data=envelope.data.copy())
    try:
        return decode(envelope.data)
    except msgspec.ValidationError as exc:
        raise BadLine(f"invalid {envelope.type} data: {exc}") from None
    except msgspec.DecodeError as exc:  # the envelope pass keeps data raw, unchecked UTF-8
        raise BadLine(f"malformed JSON in {envelope.type} data: {exc}") from None
