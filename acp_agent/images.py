"""Is an image block's ``data`` what its ``mimeType`` says? Checked at admission (-32602).

A client's image goes to the model as it is; a block whose data is not base64, or whose bytes
are not an image of the claimed type, would be refused by the provider only at the model
request (costing a turn, leaving a history the model cannot be sent) or, worse, passed on as
something else. So the data must be strict base64 (RFC 4648 alphabet, padding, no whitespace)
and start with the signature of the claimed type; a type with no known signature is refused
too (a model takes PNG, JPEG, GIF and WebP; BMP, TIFF, AVIF and HEIC are recognized as well).
"""

from __future__ import annotations

import binascii
from collections.abc import Callable
from typing import Final

Check = Callable[[bytes], bool]


def _ftyp(*brands: bytes) -> Check:
    return lambda data: data[4:8] == b"ftyp" and data[8:12] in brands


SIGNATURES: Final[dict[str, Check]] = {
    "image/png": lambda d: d.startswith(b"\x89PNG\r\n\x1a\n"),
    "image/jpeg": lambda d: d.startswith(b"\xff\xd8\xff"),
    "image/gif": lambda d: d.startswith((b"GIF87a", b"GIF89a")),
    "image/webp": lambda d: d[:4] == b"RIFF" and d[8:12] == b"WEBP",
    "image/bmp": lambda d: d.startswith(b"BM"),
    "image/tiff": lambda d: d.startswith((b"II*\x00", b"MM\x00*")),
    "image/avif": _ftyp(b"avif", b"avis"),
    "image/heic": _ftyp(b"heic", b"heix", b"mif1", b"msf1"),
}
ALIASES: Final = {"image/jpg": "image/jpeg", "image/x-png": "image/png"}


def image_problem(data: str, mime_type: str) -> str | None:
    """Why ``data`` is not base64 of an image of ``mime_type`` (``None``: it is one)."""
    kind = mime_type.split(";", 1)[0].strip().lower()
    check = SIGNATURES.get(ALIASES.get(kind, kind))
    if check is None:
        known = ", ".join(SIGNATURES)
        return f"image type {mime_type!r} is not supported (one of {known})"
    try:
        raw = binascii.a2b_base64(data.encode("ascii"), strict_mode=True)
    except (binascii.Error, UnicodeEncodeError):
        return "image data is not valid base64"
    if not check(raw):
        return f"image data is not a {kind} image (its first bytes are not a {kind} signature)"
    return None
