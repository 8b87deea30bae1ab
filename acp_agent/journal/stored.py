"""One session as a journal store lists it, and the side files a shared store keeps (``store.py``;
here so the stores need not import the seam that opens them)."""

from __future__ import annotations

from typing import Final

import msgspec


class StoredSession(msgspec.Struct, frozen=True):
    """One session as listed: its header line (as in the journal) and its last change."""

    session_id: str
    header_line: bytes
    updated_ns: int
    title: str | None = None
    """A shared store's copy of the title (``None``: read the local side file)."""
    archived: bool | None = None
    """A shared store's copy of the archive flag (``None``: look for the local side file)."""


SIDE_FILES: Final = ("title", "title.client", "settings.json", "archived")
"""The side files of a session directory a shared store keeps a copy of, for other hosts."""
