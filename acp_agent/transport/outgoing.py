"""Requests we send to the client, correlated with the responses it sends back.

Ids are integers from a counter. Each request has a ``_Waiter`` until its response arrives; a
response with an id nobody waits for (never sent, already answered, or abandoned by a cancelled
caller) is reported by ``settle`` returning ``False``. Once the wire is gone (``fail_all``) every
waiting request and every later one fails with ``WireClosed``.
"""

from __future__ import annotations

import itertools
from typing import Any, TypeVar

import anyio
import msgspec

from acp_agent.errors import ErrorCode, InvalidPeerResult, PeerError, WireClosed
from acp_agent.transport.jsonrpc import IncomingErrorResponse, IncomingResponse

T = TypeVar("T")


class _Waiter:
    """One outgoing request waiting for its response."""

    def __init__(self) -> None:
        self.done = anyio.Event()
        self._outcome: msgspec.Raw | PeerError | WireClosed | None = None

    def settle(self, outcome: msgspec.Raw | PeerError | WireClosed) -> None:
        if not self.done.is_set():
            self._outcome = outcome
            self.done.set()

    def outcome(self) -> msgspec.Raw:
        if isinstance(self._outcome, Exception):
            raise self._outcome
        assert self._outcome is not None
        return self._outcome


class PendingRequests:
    """Our requests to the client, by id, until their response arrives."""

    def __init__(self) -> None:
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Waiter] = {}
        self._closed: str | None = None

    def open(self) -> tuple[int, _Waiter]:
        if self._closed is not None:
            raise WireClosed(self._closed)
        request_id = next(self._ids)
        self._waiting[request_id] = waiter = _Waiter()
        return request_id, waiter

    def forget(self, request_id: int) -> None:
        self._waiting.pop(request_id, None)

    def settle(self, response: IncomingResponse | IncomingErrorResponse) -> bool:
        """Hand ``response`` to its waiter; ``False`` if no request has its id."""
        waiter = self._waiting.pop(response.id, None) if isinstance(response.id, int) else None
        if waiter is None:
            return False
        if isinstance(response, IncomingResponse):
            waiter.settle(response.result)
        else:
            error = response.error
            data = (
                None
                if isinstance(error.data, msgspec.UnsetType)
                else msgspec.json.decode(error.data)
            )
            waiter.settle(PeerError(error.code, error.message, data))
        return True

    def fail_all(self, reason: str) -> None:
        """Fail every waiting request, and every later one, with ``WireClosed(reason)``."""
        if self._closed is None:
            self._closed = reason
        for waiter in self._waiting.values():
            waiter.settle(WireClosed(reason))
        self._waiting.clear()


_decoders: dict[Any, msgspec.json.Decoder[Any]] = {}


def decode_result(method: str, raw: msgspec.Raw, result_type: type[T]) -> T:
    decoder = _decoders.get(result_type)
    if decoder is None:
        decoder = _decoders[result_type] = msgspec.json.Decoder(result_type)
    try:
        result: T = decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise InvalidPeerResult(
            ErrorCode.INVALID_PARAMS, "Invalid result", {"method": method, "reason": str(exc)}
        ) from exc
    return result
