"""Who may come in, decided on the request line and headers before any ACP frame is read.

In order: the path (404), the token (401: missing or wrong ``Authorization: Bearer``, compared
in constant time with ``hmac.compare_digest``), the ``Origin`` (403 when present and not in the
allow-list: a browser page of another site must not drive the agent; clients that are not
browsers send no ``Origin`` and are accepted). A refused request gets a short plain-text body and
no ACP frame.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable
from dataclasses import dataclass

from acp_agent.remote.options import Listen


@dataclass(frozen=True)
class Refusal:
    status: int
    text: str


NOT_FOUND = Refusal(404, "Not Found")
UNAUTHORIZED = Refusal(401, "Unauthorized: send 'Authorization: Bearer <token>'")
FORBIDDEN_ORIGIN = Refusal(403, "Forbidden: this Origin is not allowed")


def header(headers: Iterable[tuple[bytes, bytes]], name: bytes) -> str | None:
    """The first value of a header (``name`` in lower case), as latin-1 text."""
    for key, value in headers:
        if key.lower() == name:
            return value.decode("latin-1")
    return None


def check(listen: Listen, path: str, headers: list[tuple[bytes, bytes]]) -> Refusal | None:
    if path.rstrip("/") != listen.path:
        return NOT_FOUND
    if listen.token is not None and not _token_ok(listen.token, header(headers, b"authorization")):
        return UNAUTHORIZED
    origin = header(headers, b"origin")
    if origin is not None and origin.rstrip("/") not in listen.origins:
        return FORBIDDEN_ORIGIN
    return None


def _token_ok(token: str, authorization: str | None) -> bool:
    if authorization is None:
        return False
    scheme, _, given = authorization.partition(" ")
    if scheme.lower() != "bearer":
        return False
    return hmac.compare_digest(given.strip().encode(), token.encode())
