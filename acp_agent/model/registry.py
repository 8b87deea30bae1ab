"""Model selection: a model spec (``--model``, ``session/set_config_option``) to a provider.

Specs:

- ``script:PATH`` — the script model (docs/contract.md §5).
- ``gguf:/abs/path/model.gguf`` — a GGUF model run in this process by llama.cpp (the optional
  extra ``acp-agent-server[local]``; ``acp_agent/model/gguf.py``).
- ``PROVIDER:MODEL`` — an OpenAI-compatible Chat Completions model. ``PROVIDER`` is ``openai``,
  ``deepseek`` or the name of a ``[providers.<name>]`` table of the config file
  (``acp_agent/model/config.py``). Where a provider's settings come from, first match wins:
  base URL: ``OPENAI_BASE_URL`` / ``DEEPSEEK_BASE_URL`` (built-ins only), then the table's
  ``base_url``, then the built-in default; key: the variable the table's ``api_key_env``
  names, else ``OPENAI_API_KEY`` / ``DEEPSEEK_API_KEY`` (built-ins); a provider table with
  ``api_key_env = ""`` (or a custom one without it) needs no key.

``ModelCatalog`` is the process-wide view: the default spec, the specs a session may switch
to (the default plus every ``models`` entry of the config, in file order), one provider
instance per spec (so the script model's line cursor stays process-wide), and which keys are
missing (``KeyNeeded``: what ``authMethods`` and -32000 tell the user to set). Nothing here
imports the HTTP stack, nor (until a provider is made) the providers: the catalog is built, and
``authMethods`` answered, before the rest of the server is imported (``acp_agent/launch.py``).
A ``gguf:`` spec imports ``gguf.py`` to be checked.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import msgspec

from acp_agent.config_file import ConfigError
from acp_agent.model.config import ModelOptions, ProviderEntry, ProvidersConfig
from acp_agent.model.openai.settings import (
    DEFAULT_CONTEXT_WINDOW,
    Endpoint,
    ModelSettings,
    RetryPolicy,
    Secret,
)

if TYPE_CHECKING:
    from acp_agent.model.base import Capabilities, ModelProvider, ModelRequest, StreamEvent


class BadModelSpec(ValueError):
    pass


class _Closable(Protocol):
    async def aclose(self) -> None: ...


class Unconfigured:
    """Answers every request with an error telling the user what to configure."""

    name = "unconfigured"

    @property
    def capabilities(self) -> Capabilities:
        from acp_agent.model.base import Capabilities

        return Capabilities(writes_titles=False, selectable=False)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        from acp_agent.model.base import ModelError

        raise ModelError("no model configured: pass --model SPEC or set ACP_AGENT_MODEL")
        yield  # pragma: no cover - makes this an async generator


class _Builtin(msgspec.Struct, frozen=True):
    base_url: str
    key_env: str
    base_url_env: str
    options: ModelOptions
    """Request option defaults, below the config file's (``docs/providers.md``)."""


BUILTINS: dict[str, _Builtin] = {
    # OpenAI's reasoning models refuse max_tokens; max_completion_tokens works on every chat
    # model. 32768 output tokens: what gpt-4.1 allows (a larger bound is a 400 there).
    "openai": _Builtin(
        "https://api.openai.com/v1",
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        ModelOptions(max_tokens_field="max_completion_tokens", max_output_tokens=32_768),
    ),
    # Thinking mode answers 400 unless tool-call turns come back with their reasoning_content
    # (https://api-docs.deepseek.com/guides/thinking_mode, "Tool Calls").
    "deepseek": _Builtin(
        "https://api.deepseek.com",
        "DEEPSEEK_API_KEY",
        "DEEPSEEK_BASE_URL",
        ModelOptions(reasoning_echo=True),
    ),
}


class KeyNeeded(msgspec.Struct, frozen=True):
    """A provider whose API key is not set: what to tell the user."""

    provider: str
    env: str

    @property
    def method_id(self) -> str:
        return f"{self.provider}-api-key"

    @property
    def message(self) -> str:
        return (
            f"set the environment variable {self.env} to your {self.provider} API key where "
            f"the client starts acp-agent (or name another variable with api_key_env in "
            f"[providers.{self.provider}] of the config file), then restart the agent"
        )


class _Provider(msgspec.Struct, frozen=True):
    endpoint: Endpoint
    retry: RetryPolicy
    entry: ProviderEntry = msgspec.field(default_factory=ProviderEntry)
    defaults: ModelOptions = msgspec.field(default_factory=ModelOptions)

    def settings(self, model: str) -> ModelSettings:
        """One model's request options: ``[providers.NAME.model_options."MODEL"]``, then
        ``[providers.NAME]``, then the built-in default, then ``ModelSettings``'s own."""
        layers = (self.entry.model_options.get(model), self.entry, self.defaults)
        chosen: dict[str, Any] = {}
        for name in ModelOptions.__struct_fields__:
            values = (getattr(layer, name) for layer in layers if layer is not None)
            value = next((v for v in values if v is not None), None)
            if value is not None:
                chosen[name] = value
        return ModelSettings(**chosen)


def resolve_providers(config: ProvidersConfig, env: Mapping[str, str]) -> dict[str, _Provider]:
    return {
        name: _resolve(name, config.get(name, ProviderEntry()), env)
        for name in [*BUILTINS, *(n for n in config if n not in BUILTINS)]
    }


def _resolve(name: str, entry: ProviderEntry, env: Mapping[str, str]) -> _Provider:
    builtin = BUILTINS.get(name)
    base_url = (builtin and env.get(builtin.base_url_env)) or entry.base_url
    base_url = base_url or (builtin.base_url if builtin else None)
    if not base_url:
        raise ConfigError(f"providers.{name}: base_url is required for a provider of your own")
    if not base_url.startswith(("http://", "https://")):
        where = builtin.base_url_env if builtin else f"providers.{name}.base_url"
        raise ConfigError(f"{where}: expected an http:// or https:// URL, got {base_url!r}")
    key_env = entry.api_key_env
    if key_env is None and builtin is not None:
        key_env = builtin.key_env
    key = env.get(key_env, "").strip() if key_env else ""
    defaults = Endpoint(name, base_url)
    endpoint = Endpoint(
        name,
        base_url,
        Secret(key) if key else None,
        key_env or None,
        entry.timeout_s or defaults.timeout_s,
        entry.connect_timeout_s or defaults.connect_timeout_s,
    )
    retries = entry.max_retries if entry.max_retries is not None else RetryPolicy().max_retries
    options = builtin.options if builtin is not None else ModelOptions()
    return _Provider(endpoint, RetryPolicy(max_retries=retries), entry, options)


class ProviderKind(StrEnum):
    """Which provider a spec names: the catalog reads it off the spec, once (``ModelCatalog.kind``)."""

    SCRIPT = "script"
    GGUF = "gguf"
    HTTP = "http"
    """An OpenAI-compatible endpoint: a built-in provider or a ``[providers.NAME]`` table."""


class Spec(msgspec.Struct, frozen=True):
    """A model spec, read: ``kind``, the provider's ``name`` and what names the model (``rest``)."""

    kind: ProviderKind
    name: str
    rest: str


class ModelCatalog:
    def __init__(
        self,
        default: str | None,
        config: ProvidersConfig | None = None,
        env: Mapping[str, str] | None = None,
        *,
        context_window: int | None = None,
    ) -> None:
        """``context_window``: the process-wide window (``--context-window``), for models whose
        settings name none."""
        config = config or {}
        self.context_window = context_window
        self._providers = resolve_providers(config, os.environ if env is None else env)
        self._listed = [
            f"{name}:{model}" for name, entry in config.items() for model in entry.models
        ]
        self.default = default or (self._listed[0] if self._listed else None)
        self._cache: dict[str, ModelProvider] = {}
        self._to_close: list[_Closable] = []
        for spec in filter(None, [self.default, *self._listed]):
            self._split(spec)  # fail at startup, not at the first request

    def choices(self) -> list[str]:
        """Every spec a session may switch to, the default first."""
        return list(dict.fromkeys(filter(None, [self.default, *self._listed])))

    def key_names(self) -> frozenset[str]:
        """The environment variables that hold a provider's key (built-in or configured): no
        command the agent runs sees them (``sandbox/credentials.py``)."""
        names = (provider.endpoint.api_key_env for provider in self._providers.values())
        return frozenset(name for name in names if name)

    def offers_selector(self) -> bool:
        """Whether sessions get a model ``configOptions`` entry: when a real model is there."""
        return any(self.provider(spec).capabilities.selectable for spec in self.choices())

    def provider(self, spec: str | None) -> ModelProvider:
        if not spec:
            return Unconfigured()
        if spec not in self._cache:
            self._cache[spec] = self._make(spec)
        return self._cache[spec]

    def key_needed(self, spec: str | None) -> KeyNeeded | None:
        provider = self._providers.get(self._split(spec)[0]) if spec else None
        if provider is None:  # not an HTTP provider's: no key
            return None
        endpoint = provider.endpoint
        if endpoint.missing_key and endpoint.api_key_env:
            return KeyNeeded(endpoint.name, endpoint.api_key_env)
        return None

    def parse(self, spec: str) -> Spec:
        """The spec read (``BadModelSpec``): the one place a spec's prefix is looked at."""
        name, rest = self._split(spec)
        kinds = {"script": ProviderKind.SCRIPT, "gguf": ProviderKind.GGUF}
        return Spec(kinds.get(name, ProviderKind.HTTP), name, rest)

    def base_url(self, spec: str | None) -> str | None:
        """Where an HTTP provider's model is reached; ``None`` for a spec of no such provider."""
        provider = self._providers.get(self._split(spec)[0]) if spec else None
        return provider.endpoint.base_url if provider is not None else None

    def provider_names(self) -> list[str]:
        return list(self._providers)

    def keys_needed(self) -> list[KeyNeeded]:
        """One entry per provider among the choices whose key is missing."""
        needed = (self.key_needed(spec) for spec in self.choices())
        return list(dict.fromkeys(item for item in needed if item is not None))

    async def aclose(self) -> None:
        for provider in self._to_close:
            await provider.aclose()

    def _split(self, spec: str) -> tuple[str, str]:
        scheme, colon, rest = spec.partition(":")
        if colon and scheme == "gguf":
            from acp_agent.model.gguf import GgufSettings, spec_path

            try:
                spec_path(rest)
                GgufSettings.from_spec(rest, os.environ, self.context_window)
            except ValueError as exc:
                raise BadModelSpec(str(exc)) from None
            return scheme, rest
        if colon and rest and (scheme == "script" or scheme in self._providers):
            return scheme, rest
        known = ", ".join(sorted(self._providers))
        raise BadModelSpec(
            f"unknown model spec {spec!r}; expected script:PATH, gguf:PATH or PROVIDER:MODEL "
            f"with PROVIDER one of {known}"
        )

    def _make(self, spec: str) -> ModelProvider:
        scheme, rest = self._split(spec)
        if scheme == "script":
            from acp_agent.model.script import ScriptModel

            log_path = os.environ.get("ACP_AGENT_SCRIPT_REQUESTS")
            return ScriptModel(Path(rest), Path(log_path) if log_path else None)
        if scheme == "gguf":
            from acp_agent.model.gguf import GgufModel, GgufSettings, spec_path

            chosen = GgufSettings.from_spec(rest, os.environ, self.context_window)
            local = GgufModel(spec_path(rest), chosen)
            self._to_close.append(local)
            return local
        from acp_agent.model.openai.provider import OpenAICompatible

        provider = self._providers[scheme]
        settings, window = provider.settings(rest), self.context_window or DEFAULT_CONTEXT_WINDOW
        remote = OpenAICompatible(
            provider.endpoint, rest, provider.retry, settings=settings, context_window=window
        )
        self._to_close.append(remote)
        return remote


def make_model(spec: str | None, config: ProvidersConfig | None = None) -> ModelProvider:
    """The provider of one spec (``acp-agent journal compact`` and other one-shot users)."""
    return ModelCatalog(spec, config).provider(spec)
