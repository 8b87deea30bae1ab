"""Error types and their JSON-RPC wire codes.

Two families, never mixed:

- ``RpcError`` and its subclasses are answers to a *peer*: something the client sent was wrong
  (or a resource it named does not exist). They carry the wire code and travel back as the
  JSON-RPC ``error`` object.
- ``AgentBug``-style failures (any other exception inside a handler) are *our* fault; the
  transport answers them with ``-32603`` and sends the traceback to the log only.

The numbers are the JSON-RPC 2.0 and ACP v1 ones; ``tests/test_errors.py`` pins them.
"""

from __future__ import annotations

from enum import IntEnum
from typing import TypeVar

import msgspec

T = TypeVar("T")


class ErrorCode(IntEnum):
    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    REQUEST_CANCELLED = -32800
    AUTH_REQUIRED = -32000
    RESOURCE_NOT_FOUND = -32002


class RpcError(Exception):
    """An error answered to the peer as a JSON-RPC ``error`` object."""

    code: ErrorCode = ErrorCode.INTERNAL_ERROR

    def __init__(self, message: str, data: object = None, *, code: ErrorCode | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data
        if code is not None:
            self.code = code


class ParseError(RpcError):
    code = ErrorCode.PARSE_ERROR


class InvalidRequest(RpcError):
    code = ErrorCode.INVALID_REQUEST


class MethodNotFound(RpcError):
    code = ErrorCode.METHOD_NOT_FOUND


class InvalidParams(RpcError):
    code = ErrorCode.INVALID_PARAMS


class InternalError(RpcError):
    code = ErrorCode.INTERNAL_ERROR


class AuthRequired(RpcError):
    code = ErrorCode.AUTH_REQUIRED


class ResourceNotFound(RpcError):
    code = ErrorCode.RESOURCE_NOT_FOUND


class PeerError(Exception):
    """The client answered one of *our* requests with an error object."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.data = data


class InvalidPeerResult(PeerError):
    """The client answered one of *our* requests with a result of the wrong shape."""


class WireClosed(Exception):
    """The wire to the client is gone (EPIPE on stdout, or no response can arrive any more).

    Raised by byte sinks and by ``Connection.request``; the connection turns it into a shutdown
    signal (``Connection.wire_closed``) instead of a traceback per frame.
    """


def decode_params(
    raw: msgspec.Raw | bytes, type_: type[T], decoder: msgspec.json.Decoder[T] | None = None
) -> T:
    """Decode ``params`` into ``type_``; a shape mismatch becomes -32602 naming the path."""
    try:
        value = decoder.decode(raw) if decoder is not None else msgspec.json.decode(raw, type=type_)
    except RecursionError as exc:
        raise InvalidParams("Invalid params", {"path": "$", "reason": TOO_DEEP}) from exc
    except msgspec.ValidationError as exc:  # subclass of DecodeError: catch it first
        text = str(exc)
        path = text.rsplit(" - at `", 1)[1].rstrip("`") if " - at `" in text else "$"
        raise InvalidParams("Invalid params", {"path": path, "reason": text}) from exc
    except msgspec.DecodeError as exc:
        raise InvalidParams("Invalid params", {"path": "$", "reason": str(exc)}) from exc
    if not within_depth(value):
        raise InvalidParams("Invalid params", {"path": "$", "reason": TOO_DEEP})
    return value


MAX_DEPTH = 64
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"


def within_depth(value: object, limit: int = MAX_DEPTH) -> bool:
    """Whether ``value`` nests at most ``limit`` levels of objects and arrays.

    One limit at the boundary, far under the interpreter's: what is admitted can always be
    journaled, replayed and re-encoded later (deep values would fail there, not here).
    """
    try:
        stack: list[tuple[object, int]] = [(msgspec.to_builtins(value), 1)]
    except RecursionError:
        return False
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            items: list[object] = list(item.values())
        elif isinstance(item, list):
            items = item
        else:
            continue
        if depth > limit:
            return False
        stack.extend((child, depth + 1) for child in items)
    return True
