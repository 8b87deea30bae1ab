"""The names MCP tools get in front of the model: ``mcp__<server>__<tool>``.

Model APIs accept ``[A-Za-z0-9_-]{1,64}``: every other character becomes ``_``; a name longer
than 64 characters keeps its first 55 and ends with ``_`` and 8 hex digits of a hash of the
unsanitized pair. Collisions (two pairs sanitizing to one name) go to the first in order
(servers in ``mcpServers`` order, tools in listing order); later ones get ``_2``, ``_3``, ...
The result depends only on the input, so the same servers give the same names in every turn.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

PREFIX = "mcp__"
MAX_LEN = 64
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def sanitize(part: str) -> str:
    return _UNSAFE.sub("_", part) or "_"


def base_name(server: str, tool: str) -> str:
    name = f"{PREFIX}{sanitize(server)}__{sanitize(tool)}"
    if len(name) <= MAX_LEN:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_LEN - 9]}_{digest}"


def assign(pairs: Sequence[tuple[str, str]]) -> list[str]:
    """One unique model-facing name per ``(server, tool)`` pair, in order."""
    taken: set[str] = set()
    names: list[str] = []
    for server, tool in pairs:
        name = candidate = base_name(server, tool)
        counter = 1
        while name in taken:
            counter += 1
            suffix = f"_{counter}"
            name = candidate[: MAX_LEN - len(suffix)] + suffix
        taken.add(name)
        names.append(name)
    return names


def split(name: str) -> tuple[str, str] | None:
    """``(server, tool)`` as far as a sanitized name tells (for display when not connected)."""
    if not name.startswith(PREFIX):
        return None
    server, sep, tool = name[len(PREFIX) :].partition("__")
    return (server, tool) if sep and server and tool else None
