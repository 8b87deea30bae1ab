"""Decoding a whole journal at once, when nothing in it is in doubt (``session/load``'s open).

Theory of operation
-------------------
``reader.py`` walks a journal line by line, because at the first bad line it must decide
whether it is a torn tail or corruption, and say why. But almost every journal it reads has no
bad line at all, and for those the walk is mostly Python spent per line: about 3.5 times the
raw ``msgspec`` decode of the same lines (``docs/benchmarks.md``, "Replay <= 2.5x raw decoding").
``decode_body`` is the same reading of such a journal with the per-line work done in bulk:

1. one ``split``, and each line's checksum verified in one comprehension (per line: the slice,
   the two ``crc32`` calls and the comparison of the member; no Python function call);
2. every line decoded by **one** ``decode_lines`` call of the same decoder ``format.py``'s
   ``decode_entry`` uses first (the envelope tagged by ``type``, ``data`` typed), so it accepts
   and refuses exactly the lines that decoder does;
3. the seqs compared with ``1..n`` as one list.

Whatever it cannot vouch for, it does not judge: a line without a verifying checksum, a NUL
byte, a missing final newline, an event type this version does not know (the tagged decoder
refuses it; ``format.py`` then makes an ``UnknownEvent``), a blank line, a wrong seq. It returns
``None`` and the caller reads line by line as before, which accepts the same journals and names
the first bad line. So the fast path may only ever say yes to a journal the line-by-line read
would accept in full, with equal entries (``tests/journal/test_bulk.py`` holds the two equal),
and every refusal, torn tail or ``JournalCorrupt`` still comes from ``reader.py``.

If you change the line shape (``format.py``) or the one-pass decoder, change this too.
"""

from __future__ import annotations

import zlib
from operator import attrgetter
from typing import Any, Final

import msgspec

from acp_agent.journal.events import Entry
from acp_agent.journal.format import typed_line_decoder

_MEMBER: Final = b',"crc":"%08x"}'
_CRC_MEMBER_LEN: Final = len(_MEMBER % 0)
_SEQ: Final = attrgetter("seq")


def decode_body(body: bytes) -> list[Entry] | None:
    """The entries of ``body`` (every line after a sealed header, each ``\\n``-terminated,
    seqs from 1) when every line is sealed, verifies, decodes as a known event and has the next
    seq; ``None`` when anything is in doubt (read line by line then)."""
    if (body and not body.endswith(b"\n")) or b"\x00" in body:
        return None
    lines = body.split(b"\n")
    lines.pop()
    if not _all_sealed(lines):
        return None
    try:
        typed: list[Any] = typed_line_decoder.decode_lines(body)
    except msgspec.DecodeError:  # and its ValidationError: an unknown type, or a bad line
        return None
    if len(typed) != len(lines) or list(map(_SEQ, typed)) != list(range(1, len(lines) + 1)):
        return None
    return [Entry(line.seq, line.time, line.data) for line in typed]


def _all_sealed(lines: list[bytes]) -> bool:
    """Every line ends with the checksum member of the bytes before it (``format.py``)."""
    crc32, member, cut = zlib.crc32, _MEMBER, -_CRC_MEMBER_LEN
    return all([line[cut:] == member % crc32(b"}", crc32(line[:cut])) for line in lines])
