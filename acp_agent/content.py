"""ACP content blocks, shared by the wire, the journal and the model.

The journal stores exactly what ACP calls a ``ContentBlock`` so that replay can hand the very
same block back to a client. Opaque pass-through members (``annotations``, ``_meta``) are kept
as JSON objects: we never interpret them, but we never drop them either.
"""

from __future__ import annotations

import msgspec

JsonObject = dict[str, object]


class TextContent(msgspec.Struct, frozen=True, tag="text", tag_field="type", omit_defaults=True):
    text: str
    annotations: JsonObject | None = None
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class ImageContent(msgspec.Struct, frozen=True, tag="image", tag_field="type", omit_defaults=True):
    data: str
    mimeType: str
    uri: str | None = None
    annotations: JsonObject | None = None
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class AudioContent(msgspec.Struct, frozen=True, tag="audio", tag_field="type", omit_defaults=True):
    data: str
    mimeType: str
    annotations: JsonObject | None = None
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class ResourceLink(
    msgspec.Struct, frozen=True, tag="resource_link", tag_field="type", omit_defaults=True
):
    uri: str
    name: str
    title: str | None = None
    description: str | None = None
    mimeType: str | None = None
    size: int | None = None
    annotations: JsonObject | None = None
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


class ResourceContents(msgspec.Struct, frozen=True, omit_defaults=True):
    """ACP ``TextResourceContents`` (``text``) or ``BlobResourceContents`` (``blob``)."""

    uri: str
    text: str | None = None
    blob: str | None = None
    mimeType: str | None = None
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")

    def __post_init__(self) -> None:
        if (self.text is None) == (self.blob is None):
            raise ValueError("a resource has exactly one of `text` and `blob`")


class EmbeddedResource(
    msgspec.Struct, frozen=True, tag="resource", tag_field="type", omit_defaults=True
):
    resource: ResourceContents
    annotations: JsonObject | None = None
    meta: JsonObject | None = msgspec.field(default=None, name="_meta")


ContentBlock = TextContent | ImageContent | AudioContent | ResourceLink | EmbeddedResource


def text(value: str) -> TextContent:
    return TextContent(text=value)


def plain_text(blocks: list[ContentBlock] | tuple[ContentBlock, ...]) -> str:
    """The human-readable text of some blocks (for logs, titles and text-only models)."""
    parts: list[str] = []
    for block in blocks:
        match block:
            case TextContent(text=value):
                parts.append(value)
            case ResourceLink(uri=uri):
                parts.append(f"[{uri}]")
            case EmbeddedResource(resource=ResourceContents(uri=uri, text=str() as body)):
                parts.append(f"[{uri}]\n{body}")
            case EmbeddedResource(resource=ResourceContents(uri=uri)):
                parts.append(f"[{uri} (binary)]")
            case ImageContent() | AudioContent():
                parts.append(f"[{block.mimeType}]")
    return "\n".join(parts)
