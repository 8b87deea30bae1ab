"""One session as a journal store lists it (``store.py``; here so the stores need not import
the seam that opens them)."""

from __future__ import annotations

import msgspec


class StoredSession(msgspec.Struct, frozen=True):
    """One session as listed: its header line (as in the journal) and its last change."""

    session_id: str
    header_line: bytes
    updated_ns: int
