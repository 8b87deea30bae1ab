"""What configures an OpenAI-compatible provider: endpoint, key, retries, request options.

Plain values with no I/O, and importing this module imports nothing heavy (no anyio, no
structlog, no HTTP stack): the registry resolves the providers from the config file with these
before ``initialize`` is answered (``acp_agent/launch.py``). The provider (``provider.py``) and
the request encoder (``wire.py``) import them from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

import msgspec

from acp_agent.model.window import DEFAULT_CONTEXT_WINDOW as DEFAULT_CONTEXT_WINDOW

if TYPE_CHECKING:
    from acp_agent.model.base import Usage


# -- request options --------------------------------------------------------------------------

ToolChoice = Literal["auto", "required", "none"]
MaxTokensField = Literal["max_tokens", "max_completion_tokens"]
EffortField = Literal["reasoning_effort", "reasoning.effort"]
"""``reasoning_effort`` (OpenAI, DeepSeek, vLLM …) or ``reasoning: {effort}`` (OpenRouter)."""
Thinking = Literal["enabled", "disabled"]
"""DeepSeek's ``thinking: {type}`` switch."""


class WireOptions(msgspec.Struct, frozen=True):
    """How one model's requests are shaped (resolved per model by ``registry.py``)."""

    max_tokens_field: MaxTokensField = "max_tokens"
    tool_choice: ToolChoice | None = None
    reasoning_echo: bool = False
    reasoning_details_echo: bool = True
    reasoning_effort_field: EffortField = "reasoning_effort"
    thinking: Thinking | None = None
    images: bool = True
    """False: the model takes no images; each becomes ``IMAGE_NOTE`` (the user is told)."""


class Secret:
    """A string that never shows itself in a repr, a log line or a traceback's locals."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def scrub(self, text: str) -> str:
        return text.replace(self._value, "[redacted]") if self._value else text

    def __repr__(self) -> str:
        return "Secret('[redacted]')"

    __str__ = __repr__


class Endpoint(msgspec.Struct, frozen=True):
    """Where and how to reach one provider (``[providers.<name>]`` resolved with the env)."""

    name: str
    base_url: str
    api_key: Secret | None = None
    api_key_env: str | None = None
    """The variable the key comes from; ``None``: the server needs no key."""
    timeout_s: float = 600.0
    """Longest silence while reading (reasoning models can think for minutes)."""
    connect_timeout_s: float = 10.0

    @property
    def missing_key(self) -> bool:
        return self.api_key_env is not None and self.api_key is None


class RetryPolicy(msgspec.Struct, frozen=True):
    max_retries: int = 3
    base_delay_s: float = 0.5
    max_delay_s: float = 8.0
    max_retry_after_s: float = 60.0

    def delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry ``attempt`` (1-based)."""
        if retry_after is not None and 0 <= retry_after <= self.max_retry_after_s:
            return retry_after
        import random  # here: its import costs more than the rest of this module's

        backoff = min(self.max_delay_s, self.base_delay_s * 2.0 ** (attempt - 1))
        return backoff * random.uniform(0.5, 1.0)


class ModelSettings(msgspec.Struct, frozen=True):
    """One model's request options, as ``registry.py`` resolved them (per-model settings, then
    the provider's, then the built-in default); ``docs/providers.md`` lists them."""

    context_window: int | None = None
    """``None``: the process default (``OpenAICompatible(context_window=...)``)."""
    max_output_tokens: int | None = None
    tool_choice: ToolChoice | None = None
    images: bool = True
    reasoning_echo: bool = False
    reasoning_details_echo: bool = True
    think_tags: bool = False
    thinking: Thinking | None = None
    max_tokens_field: MaxTokensField = "max_tokens"
    reasoning_effort_field: EffortField = "reasoning_effort"
    input_price: float | None = None
    """Per million input tokens, for ``Usage.cost`` when the server reports none."""
    output_price: float | None = None
    local: bool = False
    """The server runs on this machine (``local = true``): declared ``local_cpu``, writes no
    titles, and is asked for its window (``probe.py``)."""

    @property
    def wire(self) -> WireOptions:
        return WireOptions(
            self.max_tokens_field,
            self.tool_choice,
            self.reasoning_echo,
            self.reasoning_details_echo,
            self.reasoning_effort_field,
            self.thinking,
            self.images,
        )

    def priced(self, usage: Usage) -> Usage:
        """``usage`` with a cost from the prices, unless the server sent one or none is set."""
        if usage.cost is not None or (self.input_price is None and self.output_price is None):
            return usage
        spent = usage.input_tokens * (self.input_price or 0.0)
        spent += usage.output_tokens * (self.output_price or 0.0)
        return msgspec.structs.replace(usage, cost=spent / 1_000_000)
