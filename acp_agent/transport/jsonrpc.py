"""The JSON-RPC 2.0 envelope: one line in, one message out; one message in, one line out.

Theory of operation
-------------------
Decoding is one msgspec pass into ``_Envelope``, whose members are all ``msgspec.Raw``: the pass
checks the JSON syntax of the whole line and that it is an object, and copies nothing. Each member
is then checked on its own with a small reused decoder, in the order that decides which id an
error may carry (``reliability.md``):

1. not JSON -> -32700, ``id: null``; JSON but not an object (batches included) -> -32600, ``id: null``
2. ``id`` of a wrong type (only string, integer and null are ids) -> -32600, ``id: null``
3. from here on the id is known and errors carry it: wrong ``jsonrpc``, non-string ``method``,
   a response with both or neither of ``result``/``error`` -> -32600
4. ``method`` present -> request (with ``id``) or notification (without); ``result``/``error``
   beside a method are ignored like any extra member, as the ACP SDKs do
5. otherwise a response (``result``) or an error response (``error``).

``params`` and ``result`` stay ``Raw`` until the router hands them to a typed decoder. Invalid
UTF-8 is rejected up front because ``Raw`` members are not UTF-8 checked by msgspec.

Two kinds of valid JSON msgspec refuses are taken on a slow path, only once the envelope pass
failed, so the fast path for everything else is exactly one msgspec pass:

- An escaped *lone* surrogate (``"\\ud83d"``, a string JavaScript cut mid-emoji). RFC 8259
  allows it, msgspec does not (its message varies: "invalid utf-16 surrogate pair", "Input data
  was truncated", "unexpected end of hex escape"), so the trigger is not its message but the
  line itself: ``replace_lone_surrogates`` rewrites each such escape to ``\\ufffd`` and the
  envelope pass runs again on the result. Replacing rather than keeping it escaped end to end:
  no Python ``str`` holding a lone surrogate can be encoded to UTF-8, so every later stage (the
  typed decoders, the journal, which must stay valid UTF-8, the replay) would need it too.
  Escapes keep their length (six bytes each), so error offsets still point into the line.
  An id is read the same way: ``"r-\\ud83d"`` is answered as ``"r-\\ufffd"``.
- A line that starts with a UTF-8 BOM. ``LineReader`` already dropped the one RFC 8259 §8.1
  lets a parser ignore, at the start of the input; one at the start of a later line is answered
  -32700 with a reason that names it (a BOM marks the start of a stream: mid-stream it is a
  client writing one per message, or files concatenated).

Unknown methods are not decided here: only the router knows method names.

Encoding goes through one reused ``msgspec.json.Encoder``; every frame is checked to hold no raw
``\\n`` (msgspec escapes control characters in strings, but a ``Raw`` value is copied verbatim) and
ends with exactly one ``\\n``. If you add a frame shape, add its encoder here and keep ``jsonrpc``
as its first member.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Raw, UnsetType

from acp_agent.errors import InvalidRequest, ParseError, RpcError
from acp_agent.transport.framing import BOM, LineTooLong

RequestId = int | str | None
"""An id as it travels; ``None`` is JSON ``null``."""


class InvalidReason(StrEnum):
    """``data.reason`` of a -32600 answer."""

    NOT_AN_OBJECT = "not_an_object"
    BAD_ID = "bad_id"
    BAD_VERSION = "bad_version"
    BAD_METHOD = "bad_method"
    MISSING_ID = "missing_id"
    RESULT_AND_ERROR = "result_and_error"
    NO_METHOD_OR_RESULT = "no_method_or_result"
    BAD_ERROR_OBJECT = "bad_error_object"
    LINE_TOO_LONG = "line_too_long"
    TOO_DEEP = "too_deep"


class ErrorObject(msgspec.Struct, frozen=True):
    """The ``error`` member of an incoming error response."""

    code: int
    message: str
    data: Raw | UnsetType = UNSET


class IncomingRequest(msgspec.Struct, frozen=True):
    id: RequestId
    method: str
    params: Raw | None


class IncomingNotification(msgspec.Struct, frozen=True):
    method: str
    params: Raw | None


class IncomingResponse(msgspec.Struct, frozen=True):
    id: RequestId
    result: Raw


class IncomingErrorResponse(msgspec.Struct, frozen=True):
    id: RequestId
    error: ErrorObject


class Invalid(msgspec.Struct, frozen=True):
    """A line that is not a valid message: answer ``error`` with ``id``."""

    error: RpcError
    id: RequestId = None


Incoming = (
    IncomingRequest | IncomingNotification | IncomingResponse | IncomingErrorResponse | Invalid
)


class _Envelope(msgspec.Struct):
    jsonrpc: Raw | UnsetType = UNSET
    id: Raw | UnsetType = UNSET
    method: Raw | UnsetType = UNSET
    params: Raw | UnsetType = UNSET
    result: Raw | UnsetType = UNSET
    error: Raw | UnsetType = UNSET


_ENVELOPE = msgspec.json.Decoder(_Envelope)
_Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_ID: msgspec.json.Decoder[RequestId] = msgspec.json.Decoder(_Int64 | str | None)
"""Ids are strings, null or integers that fit ACP's int64 ``RequestId``; anything else: -32600."""
_STR = msgspec.json.Decoder(str)
_ERROR = msgspec.json.Decoder(ErrorObject)
_NULL = Raw(b"null")
_UTF8_STEP = 1024 * 1024


def invalid_request(reason: InvalidReason) -> InvalidRequest:
    return InvalidRequest("Invalid request", {"reason": reason.value})


def decode_message(line: bytes | LineTooLong) -> Incoming | None:
    """Classify one line; ``None`` for a blank line, which is ignored."""
    if isinstance(line, LineTooLong):
        return Invalid(invalid_request(InvalidReason.LINE_TOO_LONG))
    if not line or line.isspace():
        return None
    try:
        _check_utf8(line)
        envelope = _ENVELOPE.decode(line)
    except msgspec.ValidationError:  # subclass of DecodeError: catch it first
        return Invalid(invalid_request(InvalidReason.NOT_AN_OBJECT))
    except (msgspec.DecodeError, UnicodeDecodeError) as exc:
        return _undecodable(line, exc)
    except RecursionError:  # nesting deeper than the decoder's stack: answered, not fatal
        return Invalid(invalid_request(InvalidReason.TOO_DEEP))
    return _classify(envelope)


def _undecodable(line: bytes, exc: Exception) -> Incoming | None:
    """The slow path: a line msgspec refused is decoded again with its lone surrogate escapes
    read as U+FFFD (module docstring), if it holds any; else it is a -32700.

    Invalid UTF-8 is never rewritten. The second pass recurses once at most: the rewritten
    line holds no lone surrogate escape (``replace_lone_surrogates`` is idempotent).
    """
    if not isinstance(exc, UnicodeDecodeError):
        repaired = replace_lone_surrogates(line)
        if repaired is not line:
            return decode_message(repaired)
    return Invalid(ParseError("Parse error", {"reason": _parse_error_reason(line, exc)}))


def _parse_error_reason(line: bytes, exc: Exception) -> str:
    if line.startswith(BOM):
        return "a byte order mark (U+FEFF) is ignored only at the start of the input"
    return str(exc)


_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
"""What every surrogate escape starts with; a line without it is not rewritten at all."""
_SURROGATE = re.compile(
    rb"\\u[dD](?:[89abAB][0-9a-fA-F]{2}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?|[c-fC-F][0-9a-fA-F]{2})"
)
"""A high surrogate escape with the low one after it (a pair, 12 bytes), else one alone (6)."""
_REPLACEMENT = b"\\ufffd"
_ESCAPED_BACKSLASH = b"\\\\"
_MASK = b"\xff\xff"
"""Stands in for an escaped backslash while scanning: ``\\xff`` is never part of valid UTF-8."""


def replace_lone_surrogates(line: bytes) -> bytes:
    """``line`` with every escape of a lone surrogate replaced by ``\\ufffd``.

    Invariants: the result has the same length, and is ``line`` itself when nothing is
    replaced (no lone surrogate escape, or ``line`` is not valid UTF-8); a valid pair (high
    ``\\ud800``-``\\udbff`` right before low ``\\udc00``-``\\udfff``) is kept; idempotent.

    How: escaped backslashes are masked first (``bytes.replace`` pairs each run of backslashes
    from its left end, as JSON does: no escape holds a backslash after its first byte), so
    every backslash left starts a real escape (``\\\\ud83d`` is a backslash and text,
    ``\\\\\\ud83d`` a backslash and an escape). Scanning left to right, a pair is matched
    whole, so a low matched alone has no high before it. Lone ones are overwritten in a copy of
    ``line`` at the same offsets. Linear time, memory a few copies of the line (on the slow
    path only); the loop runs in Python once per surrogate escape, not per byte.
    """
    if not _MAYBE_SURROGATE.search(line) or b"\xff" in line:
        return line
    masked = line.replace(_ESCAPED_BACKSLASH, _MASK)
    out: bytearray | None = None
    for match in _SURROGATE.finditer(masked):
        start, end = match.span()
        if end - start == len(_REPLACEMENT):
            if out is None:
                out = bytearray(line)
            out[start:end] = _REPLACEMENT
    return line if out is None else bytes(out)


def _check_utf8(line: bytes) -> None:
    """Raise ``UnicodeDecodeError`` for invalid UTF-8, holding at most one step decoded."""
    if line.isascii():
        return
    decoder = codecs.getincrementaldecoder("utf-8")()
    with memoryview(line) as view:
        for start in range(0, len(view), _UTF8_STEP):
            decoder.decode(view[start : start + _UTF8_STEP])
    decoder.decode(b"", final=True)


def _classify(envelope: _Envelope) -> Incoming:
    if isinstance(envelope.id, UnsetType):
        request_id: RequestId | UnsetType = UNSET
    else:
        try:
            request_id = _ID.decode(envelope.id)
        except msgspec.ValidationError:
            return Invalid(invalid_request(InvalidReason.BAD_ID))
    reply_id = None if isinstance(request_id, UnsetType) else request_id
    if not _is_version_2(envelope.jsonrpc):
        return Invalid(invalid_request(InvalidReason.BAD_VERSION), reply_id)
    if not isinstance(envelope.method, UnsetType):
        return _call(envelope.method, envelope.params, request_id)
    return _response(envelope, request_id)


def _is_version_2(raw: Raw | UnsetType) -> bool:
    if isinstance(raw, UnsetType):
        return False
    try:
        return _STR.decode(raw) == "2.0"
    except msgspec.ValidationError:
        return False


def _call(
    method_raw: Raw, params_raw: Raw | UnsetType, request_id: RequestId | UnsetType
) -> Incoming:
    reply_id = None if isinstance(request_id, UnsetType) else request_id
    try:
        method = _STR.decode(method_raw)
    except msgspec.ValidationError:
        return Invalid(invalid_request(InvalidReason.BAD_METHOD), reply_id)
    params = None if isinstance(params_raw, UnsetType) or params_raw == _NULL else params_raw
    if isinstance(request_id, UnsetType):
        return IncomingNotification(method, params)
    return IncomingRequest(request_id, method, params)


def _response(envelope: _Envelope, request_id: RequestId | UnsetType) -> Incoming:
    if isinstance(request_id, UnsetType):
        return Invalid(invalid_request(InvalidReason.MISSING_ID))
    has_result = not isinstance(envelope.result, UnsetType)
    has_error = not isinstance(envelope.error, UnsetType)
    if has_result and has_error:
        return Invalid(invalid_request(InvalidReason.RESULT_AND_ERROR), request_id)
    if not isinstance(envelope.result, UnsetType):
        return IncomingResponse(request_id, envelope.result)
    if isinstance(envelope.error, UnsetType):
        return Invalid(invalid_request(InvalidReason.NO_METHOD_OR_RESULT), request_id)
    try:
        return IncomingErrorResponse(request_id, _ERROR.decode(envelope.error))
    except msgspec.ValidationError:
        return Invalid(invalid_request(InvalidReason.BAD_ERROR_OBJECT), request_id)


# --- encoding ------------------------------------------------------------------------------------


class _WireError(msgspec.Struct, frozen=True):
    code: int
    message: str
    data: object = UNSET


class _Response(msgspec.Struct, frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    result: object


class _ErrorResponse(msgspec.Struct, frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    error: _WireError


class _Notification(msgspec.Struct, frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: object = UNSET


class _Request(msgspec.Struct, frozen=True, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: int
    method: str
    params: object = UNSET


_ENCODER = msgspec.json.Encoder()


class FrameError(ValueError):
    """The encoded message would not be one line (a ``Raw`` value holding a newline)."""


def encode_response(request_id: RequestId, result: object) -> bytes:
    return _frame(_Response(id=request_id, result=result))


def encode_error(request_id: RequestId, error: RpcError) -> bytes:
    """The error response for ``error``; ``data`` is omitted when ``None`` or not encodable."""
    data = UNSET if error.data is None else error.data
    wire = _WireError(int(error.code), error.message, data)
    try:
        return _frame(_ErrorResponse(id=request_id, error=wire))
    except (TypeError, ValueError, msgspec.EncodeError):
        bare = _WireError(int(error.code), error.message)
        return _frame(_ErrorResponse(id=request_id, error=bare))


def encode_notification(method: str, params: object = None) -> bytes:
    return _frame(_Notification(method=method, params=_omit_none(params)))


def encode_notifications(method: str, params: Sequence[object]) -> bytes:
    """One ``method`` notification per item of ``params``, the frames joined: the bytes of
    ``encode_notification`` for each, in one encoder call (a replay sends thousands). The
    params are encoded as lines, and every line is put in its envelope by one ``replace``: an
    encoded frame holds no raw newline, so each newline ends one params member."""
    if not params:
        return b""
    if None in params:  # a frame without a "params" member: one at a time
        return b"".join([encode_notification(method, p) for p in params])
    body = _ENCODER.encode_lines(params)
    if body.count(b"\n") != len(params):
        raise FrameError("an encoded frame may not contain a raw newline")
    head = b'{"jsonrpc":"2.0","method":%s,"params":' % _ENCODER.encode(method)
    return head + body.replace(b"\n", b"}\n" + head)[: -len(head)]


def encode_request(request_id: int, method: str, params: object = None) -> bytes:
    return _frame(_Request(id=request_id, method=method, params=_omit_none(params)))


def _omit_none(params: object) -> object:
    return UNSET if params is None else params


def _frame(message: msgspec.Struct) -> bytes:
    body = _ENCODER.encode(message)
    if b"\n" in body:
        raise FrameError("an encoded frame may not contain a raw newline")
    return body + b"\n"
