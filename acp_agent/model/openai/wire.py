"""Chat Completions bodies: a ``ModelRequest`` out, streamed ``chat.completion.chunk``s in.

The request's ``system`` text goes first, as the one ``{"role": "system"}`` message. Then the
messages map one to one, in history order, and nothing is merged:

- ``UserTurn`` → ``{"role": "user", "content": ...}``, one message per turn, so a prompt and the
  contexts injected beside it stay separate consecutive user messages in journal order. The
  content is a string (the blocks' text, ``plain_text``); only when a block is an image does it
  become a list of content parts (``text`` / ``image_url`` with a data URI).
- ``AssistantTurn`` → ``{"role": "assistant", "content": text, "tool_calls"?: [...]}`` with
  each call's ``arguments`` as a JSON string, as the API wants. ``content`` is ``""`` (never
  ``null``) beside tool calls: llama-cpp-python's server answers 500 to ``null``. Thoughts go
  back only where the provider asks for them (``WireOptions``): with ``reasoning_echo`` a message
  that carried tool calls gets its thought text, as streamed, as ``reasoning_content`` (DeepSeek's
  thinking mode answers 400 without it; an empty thought is sent as ``""``, the field must be
  there); with ``reasoning_details_echo`` the turn's ``reasoning_details`` (OpenRouter) go back
  verbatim. An assistant turn with neither text nor tool calls (a cancelled answer) is left out.
- ``ToolTurn`` → ``{"role": "tool", "tool_call_id", "content"}``; a failed call's text starts
  with ``Error: `` (the API has no error flag).

The body always streams with ``stream_options.include_usage`` so the last chunk reports usage,
and carries the output bound the provider computed (``max_tokens`` or
``max_completion_tokens``), the thinking level (``reasoning_effort``, or OpenRouter's
``reasoning: {effort}``), DeepSeek's ``thinking: {type}`` switch and ``tool_choice`` when set
(the last only beside tools). Messages and tools are encoded once (``EncodedParts``): their
size is what the provider's token estimate reads. Decoding is lenient (unknown fields ignored,
everything optional) because every OpenAI-compatible server omits something.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeVar

import msgspec

from acp_agent.content import (
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceContents,
    plain_text,
)
from acp_agent.journal.events import TextPart, ThoughtPart, ToolCallPart
from acp_agent.model.base import (
    AssistantTurn,
    ModelMessage,
    ModelRequest,
    ToolSpec,
    ToolTurn,
    UserTurn,
    tokens_of,
)
from acp_agent.model.openai.settings import WireOptions

_T = TypeVar("_T")


# -- request ----------------------------------------------------------------------------------


class ImageUrl(msgspec.Struct, frozen=True):
    url: str


class TextPartOut(msgspec.Struct, frozen=True, tag="text", tag_field="type"):
    text: str


class ImagePartOut(msgspec.Struct, frozen=True, tag="image_url", tag_field="type"):
    image_url: ImageUrl


class FunctionCallOut(msgspec.Struct, frozen=True):
    name: str
    arguments: str


class ToolCallOut(msgspec.Struct, frozen=True):
    id: str
    type: str
    function: FunctionCallOut


class UserMessageOut(msgspec.Struct, frozen=True, tag="user", tag_field="role"):
    content: str | list[TextPartOut | ImagePartOut]


class AssistantMessageOut(msgspec.Struct, frozen=True, tag="assistant", tag_field="role"):
    content: str
    tool_calls: list[ToolCallOut] | msgspec.UnsetType = msgspec.UNSET
    reasoning_content: str | msgspec.UnsetType = msgspec.UNSET
    reasoning_details: list[msgspec.Raw] | msgspec.UnsetType = msgspec.UNSET


class ToolMessageOut(msgspec.Struct, frozen=True, tag="tool", tag_field="role"):
    tool_call_id: str
    content: str


class SystemMessageOut(msgspec.Struct, frozen=True, tag="system", tag_field="role"):
    content: str


MessageOut = SystemMessageOut | UserMessageOut | AssistantMessageOut | ToolMessageOut


class FunctionOut(msgspec.Struct, frozen=True):
    name: str
    description: str
    parameters: dict[str, object]


class ToolOut(msgspec.Struct, frozen=True):
    type: str
    function: FunctionOut


class StreamOptions(msgspec.Struct, frozen=True):
    include_usage: bool


class ReasoningOut(msgspec.Struct, frozen=True):
    effort: str


class ThinkingOut(msgspec.Struct, frozen=True):
    type: str


class ChatRequest(msgspec.Struct, frozen=True):
    model: str
    messages: msgspec.Raw
    """The encoded message list (``EncodedParts.messages``)."""
    stream: bool
    stream_options: StreamOptions
    tools: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    tool_choice: str | msgspec.UnsetType = msgspec.UNSET
    max_tokens: int | msgspec.UnsetType = msgspec.UNSET
    max_completion_tokens: int | msgspec.UnsetType = msgspec.UNSET
    reasoning_effort: str | msgspec.UnsetType = msgspec.UNSET
    reasoning: ReasoningOut | msgspec.UnsetType = msgspec.UNSET
    thinking: ThinkingOut | msgspec.UnsetType = msgspec.UNSET


_ENCODER = msgspec.json.Encoder()


@dataclass(frozen=True)
class EncodedParts:
    """The messages and tools of one request, encoded: what the token estimate measures."""

    messages: bytes
    tools: bytes | None

    @property
    def estimated_tokens(self) -> int:
        """Characters of the encoded messages and tools / 4, rounded up."""
        chars = len(self.messages.decode()) + len(self.tools.decode() if self.tools else "")
        return tokens_of(chars)


def encode_parts(request: ModelRequest, options: WireOptions | None = None) -> EncodedParts:
    options = options or WireOptions()
    messages: list[MessageOut] = [SystemMessageOut(request.system)] if request.system else []
    messages += [out for message in request.messages if (out := message_out(message, options))]
    tools = [tool_out(spec) for spec in request.tools]
    return EncodedParts(_ENCODER.encode(messages), _ENCODER.encode(tools) if tools else None)


def encode_body(
    model: str,
    request: ModelRequest,
    parts: EncodedParts,
    options: WireOptions | None = None,
    max_tokens: int | None = None,
) -> bytes:
    """The whole body around ``parts``; ``max_tokens`` goes out under the configured name."""
    options = options or WireOptions()
    bound_field, effort = options.max_tokens_field, request.reasoning_effort
    nested = options.reasoning_effort_field == "reasoning.effort"
    body = ChatRequest(
        model,
        msgspec.Raw(parts.messages),
        True,
        StreamOptions(include_usage=True),
        tools=msgspec.Raw(parts.tools) if parts.tools else msgspec.UNSET,
        tool_choice=_given(options.tool_choice if parts.tools else None),
        max_tokens=_given(max_tokens if bound_field == "max_tokens" else None),
        max_completion_tokens=_given(max_tokens if bound_field != "max_tokens" else None),
        reasoning_effort=_given(None if nested else effort),
        reasoning=ReasoningOut(effort) if nested and effort is not None else msgspec.UNSET,
        thinking=ThinkingOut(options.thinking) if options.thinking else msgspec.UNSET,
    )
    return _ENCODER.encode(body)


def encode_request(
    model: str,
    request: ModelRequest,
    options: WireOptions | None = None,
    max_tokens: int | None = None,
) -> bytes:
    return encode_body(model, request, encode_parts(request, options), options, max_tokens)


def _given(value: _T | None) -> _T | msgspec.UnsetType:
    return msgspec.UNSET if value is None else value


def message_out(message: ModelMessage, options: WireOptions | None = None) -> MessageOut | None:
    match message:
        case UserTurn(content=content):
            return UserMessageOut(user_content(content, (options or WireOptions()).images))
        case AssistantTurn():
            return assistant_out(message, options or WireOptions())
        case ToolTurn(call_id=call_id, content=content, is_error=is_error):
            text = plain_text(content)
            return ToolMessageOut(call_id, f"Error: {text}" if is_error else text)


def assistant_out(turn: AssistantTurn, options: WireOptions) -> AssistantMessageOut | None:
    text = "".join(part.text for part in turn.content if isinstance(part, TextPart))
    calls = [call_out(part) for part in turn.content if isinstance(part, ToolCallPart)]
    if not text and not calls:
        return None
    thought = "".join(part.text for part in turn.content if isinstance(part, ThoughtPart))
    details = list(turn.reasoning_details) if options.reasoning_details_echo else []
    return AssistantMessageOut(
        text,
        calls or msgspec.UNSET,
        thought if calls and options.reasoning_echo else msgspec.UNSET,
        details or msgspec.UNSET,
    )


IMAGE_NOTE = "[an image was attached here; this model does not take images, so it is not shown]"


def user_content(
    blocks: list[ContentBlock], images: bool = True
) -> str | list[TextPartOut | ImagePartOut]:
    """Text, or content parts when an image is among the blocks: an ``image`` block, or an
    embedded resource whose blob is an image (OpenAI's vision guide: ``image_url`` with a URL
    or a ``data:`` URI). A model that takes no images gets ``IMAGE_NOTE`` in its place."""
    urls = [image_url(block) for block in blocks]
    if not any(urls):
        return plain_text(blocks)
    if not images:
        texts = [
            IMAGE_NOTE if url else plain_text([b]) for b, url in zip(blocks, urls, strict=True)
        ]
        return "\n".join(texts)
    parts: list[TextPartOut | ImagePartOut] = []
    for block, url in zip(blocks, urls, strict=True):
        parts.append(ImagePartOut(ImageUrl(url)) if url else TextPartOut(plain_text([block])))
    return parts


def image_url(block: ContentBlock) -> str | None:
    """The URL of an image block (a ``data:`` URI from its data, else its ``uri``)."""
    match block:
        case ImageContent(data=data, mimeType=mime, uri=uri):
            return f"data:{mime};base64,{data}" if data else uri
        case EmbeddedResource(
            resource=ResourceContents(blob=str() as blob, mimeType=str() as mime)
        ):
            return f"data:{mime};base64,{blob}" if mime.startswith("image/") else None
    return None


def call_out(call: ToolCallPart) -> ToolCallOut:
    arguments = _ENCODER.encode(call.arguments).decode()
    return ToolCallOut(call.id, "function", FunctionCallOut(call.name, arguments))


def tool_out(spec: ToolSpec) -> ToolOut:
    return ToolOut("function", FunctionOut(spec.name, spec.description, spec.parameters))


# -- streamed response ------------------------------------------------------------------------


class FunctionDelta(msgspec.Struct, frozen=True):
    name: str | None = None
    arguments: str | None = None


class ToolCallDelta(msgspec.Struct, frozen=True):
    index: int | None = None
    id: str | None = None
    function: FunctionDelta | None = None


class Delta(msgspec.Struct, frozen=True):
    content: str | None = None
    reasoning_content: str | None = None
    """DeepSeek, vLLM, SGLang, llama.cpp."""
    reasoning: str | None = None
    """OpenRouter, Ollama."""
    tool_calls: list[ToolCallDelta] | None = None
    refusal: str | None = None


class Choice(msgspec.Struct, frozen=True):
    index: int = 0
    delta: Delta | None = None
    finish_reason: str | None = None


class PromptDetails(msgspec.Struct, frozen=True):
    cached_tokens: int | None = None


class CompletionDetails(msgspec.Struct, frozen=True):
    reasoning_tokens: int | None = None


class ChunkUsage(msgspec.Struct, frozen=True):
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_details: PromptDetails | None = None
    completion_tokens_details: CompletionDetails | None = None
    prompt_cache_hit_tokens: int | None = None
    """DeepSeek's name for cached input tokens."""


class ErrorBody(msgspec.Struct, frozen=True):
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class Chunk(msgspec.Struct, frozen=True):
    choices: list[Choice] | None = None
    usage: ChunkUsage | None = None
    error: ErrorBody | str | None = None


class ErrorDocument(msgspec.Struct, frozen=True):
    """The JSON body of a failed request: ``{"error": {"message", ...}}`` (or a bare string),
    or the error itself at the top (``{"object": "error", "message", "type", "code"}``: SGLang,
    vLLM 0.10.0)."""

    error: ErrorBody | str | None = None
    message: str | None = None
    type: str | None = None
    code: str | int | None = None

    def body(self) -> ErrorBody:
        """The error's message, type and code, wherever the server put them."""
        if isinstance(self.error, ErrorBody):
            return self.error
        return ErrorBody(self.error or self.message, self.type, self.code)


CHUNK = msgspec.json.Decoder(Chunk)
ERROR_DOCUMENT = msgspec.json.Decoder(ErrorDocument)


def error_text(error: ErrorBody | str | None) -> str | None:
    if error is None or isinstance(error, str):
        return error
    detail = error.message or "no message"
    kind = error.code or error.type
    return f"{detail} ({kind})" if kind else detail
