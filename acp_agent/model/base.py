"""The model-provider seam.

A provider turns one ``ModelRequest`` (the history the journal derives, plus the tool names)
into a stream of ``StreamEvent``s. It owns no session state. Cancellation is anyio
cancellation: the session actor cancels the scope around ``stream`` and the provider must
stop at once (close its HTTP stream, stop sleeping). A failed request raises ``ModelError``.

Every provider passes ``tests/model/test_conformance.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from enum import StrEnum
from typing import Final, Protocol

import msgspec

from acp_agent.content import ContentBlock
from acp_agent.journal.events import AssistantPart, Source, ToolCallPart


class Role(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


class UserTurn(msgspec.Struct, frozen=True, tag="user", tag_field="role"):
    """A user-role message: a direct prompt, an injected context or a steering message."""

    content: list[ContentBlock]
    source: Source


class AssistantTurn(
    msgspec.Struct, frozen=True, tag="assistant", tag_field="role", omit_defaults=True
):
    content: list[AssistantPart]
    reasoning_details: tuple[msgspec.Raw, ...] = ()
    """What the provider asked to get back with this message (``Finish.reasoning_details``),
    as journaled; sent back only by providers that want it."""


class ToolTurn(
    msgspec.Struct,
    frozen=True,
    tag="tool",
    tag_field="role",
    rename={"call_id": "callId", "is_error": "isError"},
):
    call_id: str
    content: list[ContentBlock]
    is_error: bool


ModelMessage = UserTurn | AssistantTurn | ToolTurn


class ToolSpec(msgspec.Struct, frozen=True):
    name: str
    description: str
    parameters: dict[str, object]


class SystemTurn(msgspec.Struct, frozen=True, tag="system", tag_field="role"):
    """The system message as a provider sends it first (``ModelRequest.system``); not history."""

    content: str


class ModelRequest(msgspec.Struct, frozen=True):
    session_id: str
    turn: int
    step: int
    messages: list[ModelMessage]
    tools: list[ToolSpec]
    system: str = ""
    """The agent's instructions (``session/system_prompt.py``): every provider sends them first,
    as one system message; derived per request, never part of the history."""
    reasoning_effort: str | None = None
    """The session's thinking level (``low`` … ``high``); ``None``: the provider's default."""
    max_output_tokens: int | None = None
    """A tighter output bound for this request (a background title's); ``None``: the
    provider's own."""
    context_window: int | None = None
    """The window the session learned for this model (``turn/gauge.py``), which the provider
    bounds the request with instead of its configured one; ``None``: the provider's own."""
    token_ratio: float = 1.0
    """Real tokens per chars-÷-4 token, as the session calibrated it: the provider's output
    bound counts the request with it (``CHARS_PER_TOKEN``'s estimate times this)."""


class StopKind(StrEnum):
    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"


class TextDelta(msgspec.Struct, frozen=True):
    text: str


class ThoughtDelta(msgspec.Struct, frozen=True):
    text: str


class ToolCallReady(msgspec.Struct, frozen=True):
    call: ToolCallPart


class Usage(msgspec.Struct, frozen=True):
    """Token counts of one request, as the provider reported them (sent before ``Finish``)."""

    input_tokens: int
    output_tokens: int
    reasoning_tokens: int | None = None
    cached_tokens: int | None = None
    cost: float | None = None
    """What the request cost, as the provider reported it (OpenRouter's ``usage.cost``, in its
    credits); ``None`` when the provider does not say."""


class Finish(msgspec.Struct, frozen=True):
    stop: StopKind = StopKind.END_TURN
    reasoning_details: tuple[msgspec.Raw, ...] = ()
    """Opaque reasoning items the provider wants back with this assistant message on the next
    request (OpenRouter's ``reasoning_details``: ``reasoning.text`` with its ``signature``,
    ``reasoning.summary``, ``reasoning.encrypted``), each one JSON object exactly as it is to be
    re-sent: streamed fragments of one item are already merged, nothing else is changed. Empty
    for providers that send none. Not for display: the readable text came as ``ThoughtDelta``s.
    (``msgspec.Raw`` is not hashable, so neither is a ``Finish`` that carries any.)"""


class Retrying(msgspec.Struct, frozen=True):
    """The request failed before anything was yielded and is tried again after ``delay_ms``
    (attempt ``attempt`` of ``1 + max_retries``): news for the user, not part of the answer."""

    attempt: int
    max_retries: int
    reason: str
    delay_ms: int


StreamEvent = TextDelta | ThoughtDelta | ToolCallReady | Usage | Finish | Retrying


class ModelError(Exception):
    """A model request failed (network, provider error, exhausted script)."""


CHARS_PER_TOKEN: Final = 4
"""The one provider-neutral token estimate: characters / 4. The session decides compaction with
it (``turn/fit.py``) and the OpenAI-compatible provider bounds ``max_tokens`` with it
(``openai/wire.py``); they must count alike, or one would let through what the other refuses."""


def tokens_of(chars: int) -> int:
    """The estimated tokens of ``chars`` characters, rounded up."""
    return -(-chars // CHARS_PER_TOKEN)


class ContextOverflow(ModelError):
    """The provider refused the request as longer than the model's context window (OpenAI's
    ``context_length_exceeded``, vLLM's, llama.cpp's and DeepSeek's messages): the session may
    compact and try once more.

    ``window``: the window the server's error names (``window.window_named``), which the session
    keeps from then on; ``prompt_tokens``: what the server counted of the refused request, which
    calibrates the session's estimate (``turn/gauge.py``). ``None`` where the error says nothing."""

    def __init__(
        self, message: str, *, window: int | None = None, prompt_tokens: int | None = None
    ) -> None:
        super().__init__(message)
        self.window = window
        self.prompt_tokens = prompt_tokens


INVALID_ARGUMENTS: Final = "_acp_agent_invalid_arguments"
"""The one key of the arguments of a tool call whose arguments the model wrote as no JSON
object: its value is the parse error and the text as written (``malformed_call``). The call is
journaled like that and answered with a failed tool result naming the error (``turn/toolrun.py``),
so the model can correct it, instead of the turn failing."""


def malformed_call(call_id: str, name: str, text: str, error: str) -> ToolCallPart:
    return ToolCallPart(call_id, name, {INVALID_ARGUMENTS: {"error": error, "text": text}})


def invalid_arguments(call: ToolCallPart) -> str | None:
    """What to tell the model of a ``malformed_call``; ``None`` for a well-formed one."""
    bad = call.arguments.get(INVALID_ARGUMENTS)
    if not isinstance(bad, dict):
        return None
    return (
        f"the arguments of this {call.name} call are not a JSON object ({bad.get('error')}); "
        f"the tool did not run. They were: {str(bad.get('text'))[:2000]}"
    )


class Capabilities(msgspec.Struct, frozen=True):
    """What a provider can do, declared by the provider itself (``ModelProvider.capabilities``).

    Every room that decides by one of these reads it here — the session (titles, images, the
    thinking level, its window), the warm-up, the model selector, ``doctor`` — and none by the
    prefix of a model spec."""

    writes_titles: bool = True
    """May be asked for a model-written session title (``turn/titles.py``): not the script
    model, whose lines answer turns only, nor a model on the agent's own CPU."""
    images: bool = True
    """Sees image blocks (otherwise each becomes a note, and the user is told)."""
    context_window: int | None = None
    """The model's window in tokens, when the provider knows it."""
    reasoning_echo: bool = False
    """Wants its reasoning sent back with the assistant messages that carried it."""
    local_cpu: bool = False
    """Computes on the agent's own CPU: no background request may compete with a turn."""
    thinking_levels: bool = False
    """Takes a thinking level (``reasoning_effort``): the session offers the option."""
    selectable: bool = True
    """Offered in a client's model selector (the script model, a test double, is not)."""
    http_endpoint: str | None = None
    """The base URL its requests go to, if it makes HTTP requests (warmed up ahead)."""


def context_window_of(provider: ModelProvider) -> int | None:
    """The model's context window in tokens when the provider knows it."""
    window = provider.capabilities.context_window
    return window if window is not None and window > 0 else None


async def learn_window(provider: ModelProvider) -> None:
    """Let a provider that can ask its server for the window do so now (``learn_window``, an
    optional method: the OpenAI-compatible provider's ``openai/probe.py``), so the session's
    first request is sized for it."""
    learn = getattr(provider, "learn_window", None)
    if learn is not None:
        await learn()


class ModelProvider(Protocol):
    name: str

    @property
    def capabilities(self) -> Capabilities:
        """What it can do (``Capabilities``): a class attribute, or set per instance."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]: ...
