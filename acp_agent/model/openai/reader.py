"""From SSE events to ``StreamEvent``s: pure, no I/O (tests feed it strings).

Every OpenAI-compatible server streams ``chat.completion.chunk``s, and each bends the format
its own way; ``tests/model/streams/`` holds one recorded-shape stream per quirk (with the doc
or source file it follows) and ``tests/model/test_stream_corpus.py`` runs them all.

Text and thoughts, at once and in arrival order:

- ``delta.content`` → ``TextDelta`` (also Mistral's list of content parts: ``text`` parts are
  text, ``thinking`` parts thoughts); ``delta.refusal`` counts as text.
- ``delta.reasoning_content`` (DeepSeek, vLLM, SGLang, llama.cpp) or ``delta.reasoning``
  (OpenRouter, Ollama, Groq) → ``ThoughtDelta``; one of the two per delta, never both (servers
  that send both send the same text twice).
- With ``think_tags`` (off by default: OpenAI's text is never parsed), ``<think>…</think>`` in
  the content becomes thoughts, tags cut between chunks included.
- ``delta.reasoning_details`` (OpenRouter) are kept for the next request, not shown:
  consecutive fragments of one ``reasoning.text`` / ``reasoning.summary`` item (same ``type``
  and ``index``) are merged, and the list rides on ``Finish.reasoning_details``.

Tool calls are fragments keyed by ``index``; the whole batch is emitted at the end, in index
order (arrival order within an index), each call's arguments parsed as one JSON object:

- the first fragment of a call brings ``id`` and ``function.name``, later ones append to
  ``function.arguments``; parallel calls interleave their fragments. A fragment without an
  ``index`` belongs to the previous call unless it brings a new ``id``.
- A name repeated in every fragment (llama.cpp, GPT-5.x, MiniMax) is taken once: a fragment
  equal to the name so far is not appended, one that extends it replaces it.
- A new ``id`` under an index already in use opens another call when the fragment brings a
  name or the call so far is complete (Ollama numbers parallel calls all ``0``).
- ``arguments`` may be a JSON object instead of a string (llama.cpp, MiniMax); a fragment that
  is a whole JSON object while what is there already is one replaces it (servers that re-send
  the complete arguments); ``"null"`` (Ollama marshalling no arguments) is ``{}``.
- arguments that are no JSON object (a small model's broken JSON) make a ``malformed_call``:
  the turn goes on and the model gets a failed tool result naming the parse error.

Usage: the last ``usage`` seen (or ``x_groq.usage``, where Groq puts it) → one ``Usage``, sent
at the end before the tool calls; OpenRouter's ``usage.cost`` is kept.

Errors fail the request with the server's message: a chunk with an ``error`` member (OpenAI,
OpenRouter, SGLang, new vLLM and llama.cpp), a chunk that is itself an error
(``{"object": "error", "message", ...}``, vLLM), an SSE ``error`` event or ``error:`` field
(llama.cpp; the parser reports both as event ``error``). Empty ``data`` payloads are skipped.

``finish_reason``: ``stop`` / ``end_turn`` / ``eos`` / ``eos_token`` / ``stop_sequence`` /
``tool_calls`` / ``function_call`` → ``end_turn``, ``length`` / ``model_length`` /
``max_tokens`` → ``max_tokens``, ``content_filter`` → ``end_turn`` (logged); the documented
failures ``insufficient_system_resource`` (DeepSeek) and ``error`` (Mistral, OpenRouter) fail
the request; any other reason ends the turn normally with a ``model_unknown_finish_reason``
log line.

The stream is complete at ``[DONE]``, or at the end of the body once a ``finish_reason`` was
seen. A body that ends before either is ``IncompleteStream``: the connection broke; one that
never brought a choice is ``EmptyStream``, said so (a 200 with nothing in it is a server that
gave up on the request, not a network fault).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

import msgspec

from acp_agent.journal.events import ToolCallPart
from acp_agent.logs import get_logger
from acp_agent.model.base import (
    Finish,
    ModelError,
    StopKind,
    StreamEvent,
    TextDelta,
    ThoughtDelta,
    ToolCallReady,
    Usage,
    malformed_call,
)
from acp_agent.model.openai.wire import ErrorBody, error_text

log = get_logger("acp_agent.model")

DONE = "[DONE]"
ERROR_EVENT = "error"

_STOPS = {
    "stop": StopKind.END_TURN,
    "end_turn": StopKind.END_TURN,
    "eos": StopKind.END_TURN,
    "eos_token": StopKind.END_TURN,
    "stop_sequence": StopKind.END_TURN,
    "tool_calls": StopKind.END_TURN,
    "function_call": StopKind.END_TURN,
    "content_filter": StopKind.END_TURN,
    "length": StopKind.MAX_TOKENS,
    "model_length": StopKind.MAX_TOKENS,
    "max_tokens": StopKind.MAX_TOKENS,
}
_FAILED_STOPS = frozenset({"insufficient_system_resource", "error"})

EMPTY_STREAM = (
    "the server answered 200 with an empty stream: it may have rejected the request "
    "(check its log: context size, unsupported parameter) or crashed"
)


class IncompleteStream(ModelError):
    """The body ended before ``[DONE]`` or a ``finish_reason``: the connection broke."""


class EmptyStream(IncompleteStream):
    """The body ended without a single choice and without ``[DONE]``."""


# -- the chunks as servers send them (the raw decode boundary) --------------------------------
# (These replace the reader's use of the streamed-response structs in ``wire.py``, which only
# knew OpenAI's own shape; ``wire.py`` keeps ``ErrorBody`` / ``error_text``, shared with the
# provider's HTTP error bodies.)


class _FunctionDelta(msgspec.Struct, frozen=True):
    name: str | None = None
    arguments: str | dict[str, object] | None = None


class _ToolCallDelta(msgspec.Struct, frozen=True):
    index: int | None = None
    id: str | None = None
    function: _FunctionDelta | None = None


class _TextPart(msgspec.Struct, frozen=True):
    type: str = "text"
    text: str | None = None


class _ContentPart(msgspec.Struct, frozen=True):
    """Mistral: ``{"type": "text", "text"}`` or ``{"type": "thinking", "thinking": [parts]}``."""

    type: str = "text"
    text: str | None = None
    thinking: list[_TextPart] | None = None


class _Delta(msgspec.Struct, frozen=True):
    content: str | list[_ContentPart] | None = None
    reasoning_content: str | None = None
    reasoning: str | None = None
    refusal: str | None = None
    tool_calls: list[_ToolCallDelta] | None = None
    reasoning_details: list[msgspec.Raw] | None = None


class _Choice(msgspec.Struct, frozen=True):
    index: int = 0
    delta: _Delta | None = None
    finish_reason: str | None = None


class _PromptDetails(msgspec.Struct, frozen=True):
    cached_tokens: int | None = None


class _CompletionDetails(msgspec.Struct, frozen=True):
    reasoning_tokens: int | None = None


class _Usage(msgspec.Struct, frozen=True):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    prompt_tokens_details: _PromptDetails | None = None
    completion_tokens_details: _CompletionDetails | None = None
    prompt_cache_hit_tokens: int | None = None
    """DeepSeek's name for cached input tokens."""
    cost: float | None = None
    """OpenRouter."""


class _XGroq(msgspec.Struct, frozen=True):
    usage: _Usage | None = None


class _Chunk(msgspec.Struct, frozen=True):
    choices: list[_Choice] | None = None
    usage: _Usage | None = None
    x_groq: _XGroq | None = None
    error: msgspec.Raw = msgspec.Raw()
    object: str | None = None
    """``"error"``: the whole chunk is an error (vLLM), with the fields below."""
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


class _ErrorFrame(msgspec.Struct, frozen=True):
    """The data of an SSE ``error`` event: ``{"error": {...}}`` or the error itself."""

    error: msgspec.Raw = msgspec.Raw()
    message: str | None = None
    type: str | None = None
    code: str | int | None = None


_CHUNK = msgspec.json.Decoder(_Chunk)
_ERROR_FRAME = msgspec.json.Decoder(_ErrorFrame)
_ERROR_MEMBER = msgspec.json.Decoder(ErrorBody | str)
_OBJECT = msgspec.json.Decoder(dict[str, object])
_ENCODER = msgspec.json.Encoder()


# -- the reader -------------------------------------------------------------------------------


class ChatStreamReader:
    def __init__(self, provider: str, *, think_tags: bool = False) -> None:
        self.provider = provider
        self._think = ThinkTags() if think_tags else None
        self._calls = ToolCalls(provider)
        self._details = ReasoningDetails()
        self._usage: Usage | None = None
        self._finish: str | None = None
        self._answered = False
        self._done = False

    @property
    def done(self) -> bool:
        return self._done

    def feed(self, data: str, event: str = "message") -> list[StreamEvent]:
        """One SSE event; raises ``ModelError`` for an error or a broken chunk."""
        if self._done:
            return []
        if event == ERROR_EVENT:
            raise ModelError(f"{self.provider} reported an error: {error_frame_text(data)}")
        text = data.strip()
        if not text:
            return []  # an empty ``data:`` frame: nothing to read
        if text == DONE:
            self._done = True
            return []
        try:
            chunk = _CHUNK.decode(text)
        except msgspec.DecodeError as exc:
            raise ModelError(f"{self.provider}: unreadable stream chunk: {exc}") from exc
        return self._chunk(chunk)

    def end(self) -> list[StreamEvent]:
        """The body ended: held-back text, the usage, the tool-call batch, then ``Finish``."""
        if not self._done and self._finish is None:
            if not self._answered:
                raise EmptyStream(f"{self.provider}: {EMPTY_STREAM}")
            raise IncompleteStream(
                f"{self.provider}: the connection closed before the answer was complete"
            )
        events: list[StreamEvent] = self._think.flush() if self._think is not None else []
        if self._usage is not None:
            events.append(self._usage)
        events += [ToolCallReady(call) for call in self._calls.batch()]
        events.append(Finish(self._stop(), self._details.items()))
        return events

    def _chunk(self, chunk: _Chunk) -> list[StreamEvent]:
        if (error := chunk_error(chunk)) is not None:
            raise ModelError(f"{self.provider} reported an error: {error}")
        events: list[StreamEvent] = []
        for choice in chunk.choices or ():
            self._answered = True
            if choice.index != 0:
                continue
            if choice.delta is not None:
                events += self._delta(choice.delta)
            if choice.finish_reason:
                self._finish = choice.finish_reason
        usage = chunk.usage or (chunk.x_groq.usage if chunk.x_groq is not None else None)
        if usage is not None:
            self._usage = usage_of(usage)
        return events

    def _delta(self, delta: _Delta) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if thought := delta.reasoning_content or delta.reasoning:
            events.append(ThoughtDelta(thought))
        if isinstance(delta.content, str):
            events += self._text(delta.content)
        elif delta.content is not None:
            events += self._parts(delta.content)
        if delta.refusal:
            events.append(TextDelta(delta.refusal))
        for fragment in delta.tool_calls or ():
            self._calls.add(fragment)
        for detail in delta.reasoning_details or ():
            self._details.add(detail)
        return events

    def _parts(self, parts: list[_ContentPart]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        for part in parts:
            if part.type == "thinking":
                if thought := "".join(piece.text or "" for piece in part.thinking or ()):
                    events.append(ThoughtDelta(thought))
            elif part.type == "text" and part.text:
                events += self._text(part.text)
        return events

    def _text(self, text: str) -> list[StreamEvent]:
        if not text:
            return []
        if self._think is not None:
            return self._think.split(text)
        return [TextDelta(text)]

    def _stop(self) -> StopKind:
        reason = self._finish or "stop"
        if reason in _FAILED_STOPS:
            raise ModelError(f"{self.provider} stopped the answer early: {reason}")
        stop = _STOPS.get(reason)
        if stop is None:
            log.warning("model_unknown_finish_reason", provider=self.provider, reason=reason)
            return StopKind.END_TURN
        if reason == "content_filter":
            log.warning("model_content_filtered", provider=self.provider)
        return stop


def usage_of(usage: _Usage) -> Usage:
    details, prompt = usage.completion_tokens_details, usage.prompt_tokens_details
    cached = prompt.cached_tokens if prompt is not None else None
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        reasoning_tokens=details.reasoning_tokens if details is not None else None,
        cached_tokens=cached if cached is not None else usage.prompt_cache_hit_tokens,
        cost=usage.cost,
    )


# -- errors -----------------------------------------------------------------------------------


def chunk_error(chunk: _Chunk) -> str | None:
    """The server's message when the chunk reports an error, else ``None``."""
    if (member := error_member_text(chunk.error)) is not None:
        return member
    if chunk.object == "error":
        return error_text(ErrorBody(chunk.message, chunk.type, chunk.code))
    return None


def error_frame_text(data: str) -> str:
    """The message of an SSE ``error`` event, whatever shape its data has."""
    try:
        frame = _ERROR_FRAME.decode(data)
    except msgspec.DecodeError:
        return data.strip()[:500] or "no message"
    member = error_member_text(frame.error)
    if member is not None:
        return member
    return error_text(ErrorBody(frame.message, frame.type, frame.code)) or "no message"


def error_member_text(raw: msgspec.Raw) -> str | None:
    """An ``error`` member (an object or a string); ``None`` when absent or ``null``."""
    encoded = bytes(raw).strip()
    if encoded in (b"", b"null"):
        return None
    try:
        error = _ERROR_MEMBER.decode(encoded)
    except msgspec.DecodeError:
        return encoded.decode("utf-8", "replace")[:500]
    return error_text(error) or "no message"


# -- <think> tags in the content --------------------------------------------------------------

OPEN_TAG, CLOSE_TAG = "<think>", "</think>"


class ThinkTags:
    """Splits streamed content at ``<think>`` / ``</think>``; a tag may be cut anywhere between
    chunks, so a tail that could be the start of one waits for the next chunk (or ``flush``).
    The newlines models put right after a tag are dropped."""

    def __init__(self) -> None:
        self._thinking = False
        self._held = ""
        self._after_tag = False

    def split(self, text: str) -> list[StreamEvent]:
        text, self._held = self._held + text, ""
        events: list[StreamEvent] = []
        while text:
            tag = CLOSE_TAG if self._thinking else OPEN_TAG
            at = text.find(tag)
            if at == -1:
                keep = _partial_tag(text, tag)
                self._emit(events, text[: len(text) - keep])
                self._held = text[len(text) - keep :]
                break
            self._emit(events, text[:at])
            text = text[at + len(tag) :]
            self._thinking = not self._thinking
            self._after_tag = True
        return events

    def flush(self) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        held, self._held = self._held, ""
        self._emit(events, held)
        return events

    def _emit(self, events: list[StreamEvent], text: str) -> None:
        if self._after_tag:
            text = text.lstrip("\n")
            self._after_tag = not text
        if text:
            events.append(ThoughtDelta(text) if self._thinking else TextDelta(text))


def _partial_tag(text: str, tag: str) -> int:
    """The length of the longest tail of ``text`` that is a proper prefix of ``tag``."""
    for size in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:size]):
            return size
    return 0


# -- tool calls -------------------------------------------------------------------------------


@dataclass
class _PartialCall:
    index: int
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)

    def complete(self) -> bool:
        return bool(self.name) and is_json_object("".join(self.arguments))


class ToolCalls:
    """The fragments of one answer's tool calls, assembled into a batch."""

    def __init__(self, provider: str) -> None:
        self.provider = provider
        self._calls: list[_PartialCall] = []
        self._by_index: dict[int, _PartialCall] = {}
        self._last: _PartialCall | None = None

    def add(self, fragment: _ToolCallDelta) -> None:
        call = self._slot(fragment)
        self._last = call
        if fragment.id:
            call.id = fragment.id
        if fragment.function is not None:
            call.name = merged_name(call.name, fragment.function.name or "")
            add_arguments(call, fragment.function.arguments)

    def batch(self) -> list[ToolCallPart]:
        ordered = sorted(self._calls, key=lambda call: call.index)  # stable: arrival order
        return [self._assembled(call) for call in ordered]

    def _slot(self, fragment: _ToolCallDelta) -> _PartialCall:
        index = fragment.index
        if index is None:  # some servers omit it: a new id opens a new call
            last = self._last
            if last is not None and fragment.id in (None, last.id):
                return last
            return self._open(len(self._calls))
        current = self._by_index.get(index)
        if current is None or _starts_another(current, fragment):
            return self._open(index)
        return current

    def _open(self, index: int) -> _PartialCall:
        call = _PartialCall(index)
        self._calls.append(call)
        self._by_index[index] = call
        return call

    def _assembled(self, call: _PartialCall) -> ToolCallPart:
        call_id = call.id or f"call_{uuid.uuid4().hex[:24]}"
        text = "".join(call.arguments).strip()
        if text in ("", "null"):
            return ToolCallPart(call_id, call.name, {})
        try:
            arguments = _OBJECT.decode(text)
        except msgspec.DecodeError as exc:  # the model's to correct: it gets a failed result
            log.info("tool_arguments_malformed", call_id=call_id, tool=call.name, error=str(exc))
            return malformed_call(call_id, call.name, text, str(exc))
        return ToolCallPart(call_id, call.name, arguments)


def _starts_another(current: _PartialCall, fragment: _ToolCallDelta) -> bool:
    """Ollama gives every parallel call ``index: 0``: a new id with a name (or after a
    complete call) is the next call, not more of this one."""
    if not fragment.id or current.id is None or fragment.id == current.id:
        return False
    named = fragment.function is not None and bool(fragment.function.name)
    return named or current.complete()


def merged_name(name: str, fragment: str) -> str:
    if not name or fragment.startswith(name):
        return fragment or name  # the first piece, or the whole name sent again (extended)
    return name + fragment


def add_arguments(call: _PartialCall, arguments: str | dict[str, object] | None) -> None:
    if isinstance(arguments, dict):  # a JSON object instead of a string: the whole arguments
        if arguments:
            call.arguments = [_ENCODER.encode(arguments).decode()]
        return
    if not arguments or (not call.arguments and arguments.strip() == "null"):
        return
    if call.arguments and is_json_object(arguments) and is_json_object("".join(call.arguments)):
        call.arguments = [arguments]  # the complete arguments sent again
        return
    call.arguments.append(arguments)


def is_json_object(text: str) -> bool:
    text = text.strip()
    if not (text.startswith("{") and text.endswith("}")):
        return False
    try:
        _OBJECT.decode(text)
    except msgspec.DecodeError:
        return False
    return True


# -- reasoning details (OpenRouter) -----------------------------------------------------------

_MERGED_DETAILS = {"reasoning.text": "text", "reasoning.summary": "summary"}


class ReasoningDetails:
    """Streamed ``reasoning_details`` items, fragments of one item merged, in order."""

    def __init__(self) -> None:
        self._items: list[dict[str, object]] = []

    def add(self, raw: msgspec.Raw) -> None:
        try:
            item = _OBJECT.decode(raw)
        except msgspec.DecodeError:
            return  # not an object: nothing we could send back
        last = self._items[-1] if self._items else None
        key = _MERGED_DETAILS.get(str(item.get("type")))
        if last is None or key is None or not _same_item(last, item):
            self._items.append(item)
            return
        last[key] = f"{last.get(key) or ''}{item.get(key) or ''}"
        for name, value in item.items():
            if name != key and value is not None and last.get(name) is None:
                last[name] = value  # the signature comes with the last fragment

    def items(self) -> tuple[msgspec.Raw, ...]:
        return tuple(msgspec.Raw(_ENCODER.encode(item)) for item in self._items)


def _same_item(last: dict[str, object], item: dict[str, object]) -> bool:
    return last.get("type") == item.get("type") and last.get("index") == item.get("index")
