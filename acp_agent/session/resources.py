"""What a prompt links to, read once, into the prompt the journal keeps.

A ``resource_link`` whose ``uri`` is a ``file://`` path inside the session's roots is read when
the prompt is sent, and its text joins the prompt as an embedded resource right after the link
(``{"type": "resource", "resource": {"uri", "text"}}``). So the journal holds what the model
saw: a replay, a fork or a load later sends the same text even if the file changed since, which
is the journal's rule ("model-visible = logged"). The link itself stays, for the client.

Refused, with the link left as it is (the model then sees only its uri): a path outside the
roots, anything that is not a regular file (a FIFO would block the read for ever), a file that
is not UTF-8 text. A file larger than ``MAX_LINK_BYTES`` is cut there, and the cut says so.
Other schemes (``https://``, ``zed://``) are not fetched.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Final
from urllib.parse import unquote, urlsplit

import anyio

from acp_agent.content import ContentBlock, EmbeddedResource, ResourceContents, ResourceLink
from acp_agent.logs import get_logger
from acp_agent.tools.base import ToolContext, ToolError, confine
from acp_agent.tools.files import open_regular

log = get_logger(__name__)

MAX_LINK_BYTES: Final = 256 * 1024


async def with_linked_files(blocks: Sequence[ContentBlock], ctx: ToolContext) -> list[ContentBlock]:
    """``blocks`` with the text of each linked file in the roots after its link."""
    if not any(isinstance(b, ResourceLink) for b in blocks):
        return list(blocks)
    return await anyio.to_thread.run_sync(_expand, list(blocks), ctx)


def _expand(blocks: list[ContentBlock], ctx: ToolContext) -> list[ContentBlock]:
    out: list[ContentBlock] = []
    for block in blocks:
        out.append(block)
        if isinstance(block, ResourceLink) and (text := _linked_text(block.uri, ctx)) is not None:
            out.append(EmbeddedResource(ResourceContents(uri=block.uri, text=text)))
    return out


def _linked_text(uri: str, ctx: ToolContext) -> str | None:
    parts = urlsplit(uri)
    if parts.scheme != "file" or parts.netloc not in ("", "localhost"):
        return None
    try:
        return _read_text(confine(unquote(parts.path), ctx))
    except (ToolError, OSError, UnicodeDecodeError) as exc:
        log.info("resource_link_not_read", uri=uri, reason=str(exc))
        return None


def _read_text(path: Path) -> str:
    fd = open_regular(path, os.O_RDONLY, "resource link")  # never blocks on a FIFO
    try:
        data = os.read(fd, MAX_LINK_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) <= MAX_LINK_BYTES:
        return data.decode("utf-8")
    head = data[:MAX_LINK_BYTES]
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError as exc:  # the cut may split a character: not the file's fault
        if exc.start < len(head) - 3:
            raise
        text = head[: exc.start].decode("utf-8")
    return text + f"\n[… the file continues past {MAX_LINK_BYTES} bytes; read_file reads the rest]"
