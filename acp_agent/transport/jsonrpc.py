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

Unknown methods are not decided here: only the router knows method names.

Encoding goes through one reused ``msgspec.json.Encoder``; every frame is checked to hold no raw
``\\n`` (msgspec escapes control characters in strings, but a ``Raw`` value is copied verbatim) and
ends with exactly one ``\\n``. If you add a frame shape, add its encoder here and keep ``jsonrpc``
as its first member.
"""

from __future__ import annotations

import codecs
from enum import StrEnum
from typing import Annotated, Literal

import msgspec
from msgspec import UNSET, Raw, UnsetType

from acp_agent.errors import InvalidRequest, ParseError, RpcError
from acp_agent.transport.framing import LineTooLong

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
        return Invalid(ParseError("Parse error", {"reason": str(exc)}))
    except RecursionError:  # nesting deeper than the decoder's stack: answered, not fatal
        return Invalid(invalid_request(InvalidReason.TOO_DEEP))
    return _classify(envelope)


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


def encode_request(request_id: int, method: str, params: object = None) -> bytes:
    return _frame(_Request(id=request_id, method=method, params=_omit_none(params)))


def _omit_none(params: object) -> object:
    return UNSET if params is None else params


def _frame(message: msgspec.Struct) -> bytes:
    body = _ENCODER.encode(message)
    if b"\n" in body:
        raise FrameError("an encoded frame may not contain a raw newline")
    return body + b"\n"
