"""Chat Completions bodies: a ``ModelRequest`` out, streamed ``chat.completion.chunk``s in.

The request's ``system`` text goes first, as the one ``{"role": "system"}`` message. Then the
messages map one to one, in history order, and nothing is merged:

- ``UserTurn`` → ``{"role": "user", "content": ...}``, one message per turn, so a prompt and the
  contexts injected beside it stay separate consecutive user messages in journal order. The
  content is a string (the blocks' text, ``plain_text``); only when a block is an image does it
  become a list of content parts (``text`` / ``image_url`` with a data URI).
- ``AssistantTurn`` → ``{"role": "assistant", "content": text | null, "tool_calls"?: [...]}``
  with each call's ``arguments`` as a JSON string, as the API wants. Thoughts are not sent back:
  Chat Completions has no input field for them and DeepSeek rejects ``reasoning_content`` in
  input messages. An assistant turn with neither text nor tool calls (a cancelled answer) is
  left out.
- ``ToolTurn`` → ``{"role": "tool", "tool_call_id", "content"}``; a failed call's text starts
  with ``Error: `` (the API has no error flag).

The request always streams with ``stream_options.include_usage`` so the last chunk reports
usage. Decoding is lenient (unknown fields ignored, everything optional) because every
OpenAI-compatible server omits something.
"""

from __future__ import annotations

import msgspec

from acp_agent.content import ContentBlock, ImageContent, plain_text
from acp_agent.journal.events import TextPart, ToolCallPart
from acp_agent.model.base import (
    AssistantTurn,
    ModelMessage,
    ModelRequest,
    ToolSpec,
    ToolTurn,
    UserTurn,
)

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
    content: str | None
    tool_calls: list[ToolCallOut] | msgspec.UnsetType = msgspec.UNSET


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


class ChatRequest(msgspec.Struct, frozen=True):
    model: str
    messages: list[MessageOut]
    stream: bool
    stream_options: StreamOptions
    tools: list[ToolOut] | msgspec.UnsetType = msgspec.UNSET


_ENCODER = msgspec.json.Encoder()


def encode_request(model: str, request: ModelRequest) -> bytes:
    messages: list[MessageOut] = [SystemMessageOut(request.system)] if request.system else []
    messages += [out for message in request.messages if (out := message_out(message))]
    tools = [tool_out(spec) for spec in request.tools] or msgspec.UNSET
    body = ChatRequest(model, messages, True, StreamOptions(include_usage=True), tools)
    return _ENCODER.encode(body)


def message_out(message: ModelMessage) -> MessageOut | None:
    match message:
        case UserTurn(content=content):
            return UserMessageOut(user_content(content))
        case AssistantTurn(content=parts):
            text = "".join(part.text for part in parts if isinstance(part, TextPart))
            calls = [call_out(part) for part in parts if isinstance(part, ToolCallPart)]
            if not text and not calls:
                return None
            return AssistantMessageOut(text or None, calls or msgspec.UNSET)
        case ToolTurn(call_id=call_id, content=content, is_error=is_error):
            text = plain_text(content)
            return ToolMessageOut(call_id, f"Error: {text}" if is_error else text)


def user_content(blocks: list[ContentBlock]) -> str | list[TextPartOut | ImagePartOut]:
    if not any(isinstance(block, ImageContent) for block in blocks):
        return plain_text(blocks)
    parts: list[TextPartOut | ImagePartOut] = []
    for block in blocks:
        if isinstance(block, ImageContent):
            parts.append(ImagePartOut(ImageUrl(f"data:{block.mimeType};base64,{block.data}")))
        else:
            parts.append(TextPartOut(plain_text([block])))
    return parts


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
    """The JSON body of a failed request: ``{"error": {"message", ...}}`` (or a bare string)."""

    error: ErrorBody | str | None = None
    message: str | None = None


CHUNK = msgspec.json.Decoder(Chunk)
ERROR_DOCUMENT = msgspec.json.Decoder(ErrorDocument)


def error_text(error: ErrorBody | str | None) -> str | None:
    if error is None or isinstance(error, str):
        return error
    detail = error.message or "no message"
    kind = error.code or error.type
    return f"{detail} ({kind})" if kind else detail
