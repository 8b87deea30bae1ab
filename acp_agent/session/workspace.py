"""Workspace instructions: the files users keep for coding agents, handed to the model as
injected context.

When a session is created, each of ``INSTRUCTION_FILES`` that exists in the session cwd (a
regular UTF-8 file, symbolic links followed only to targets inside the cwd) becomes one
``user/message`` through the session's ordinary ``inject()`` — an idle injection, journaled
before the first turn, shown to the client as a source-tagged ``user_message_chunk`` and
replayed on ``session/load``. Its source is ``{"kind": "plugin", "name":
"workspace-instructions", "path": "<absolute path>"}``. Nothing is added to any prompt behind
the journal's back, and a loaded, resumed or forked session is not injected again (its journal
already holds what it was given). A file over ``MAX_BYTES`` is cut there, with a note.
"""

from __future__ import annotations

import os
from pathlib import Path

import msgspec

from acp_agent.content import ContentBlock, TextContent
from acp_agent.journal.events import Source, SourceKind, source
from acp_agent.tools.base import ToolError
from acp_agent.tools.files import open_regular

INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md", ".github/copilot-instructions.md")
PLUGIN_NAME = "workspace-instructions"
MAX_BYTES = 64 << 10


class Instructions(msgspec.Struct, frozen=True):
    content: list[ContentBlock]
    source: Source


def find_instructions(cwd: str | Path) -> list[Instructions]:
    """The instruction files in ``cwd``, in ``INSTRUCTION_FILES`` order (blocking file reads)."""
    root = Path(cwd)
    found: list[Instructions] = []
    for name in INSTRUCTION_FILES:
        body = _read(root, name)
        if body is not None:
            path = str(root / name)
            text = f"Workspace instructions from {name}:\n\n{body}"
            src = source(SourceKind.PLUGIN, name=PLUGIN_NAME, path=path)
            found.append(Instructions([TextContent(text=text)], src))
    return found


def _read(root: Path, name: str) -> str | None:
    try:
        real, base = (root / name).resolve(), root.resolve()
        if not real.is_relative_to(base) or not real.is_file():
            return None
        fd = open_regular(real, os.O_RDONLY, "workspace instructions")  # never a FIFO's read
        with os.fdopen(fd, "rb") as file:
            data = file.read(MAX_BYTES + 1)
    except (OSError, ToolError):
        return None
    text = data[:MAX_BYTES].decode("utf-8", "replace").strip()
    if not text:
        return None
    if len(data) > MAX_BYTES:
        text += f"\n\n[{name} is longer than {MAX_BYTES // 1024} KiB; the rest was left out]"
    return text
