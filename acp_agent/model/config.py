"""The config file (TOML): the ``[providers]`` part.

    [providers.openai]                      # built-in: openai, deepseek; any other name is new
    base_url = "https://api.openai.com/v1"  # the API root; POST <base_url>/chat/completions
    api_key_env = "OPENAI_API_KEY"          # the variable holding the key ("" : no key needed)
    models = ["gpt-4.1", "gpt-4.1-mini"]    # offered in the session's model selector
    timeout_s = 600                         # longest silence while reading a stream
    connect_timeout_s = 10
    max_retries = 3                         # retries on 408/409/429/5xx and connection errors
    context_window = 1047576                # request options (``ModelOptions``) ...
    max_output_tokens = 32768

    [providers.openai.model_options."gpt-4.1-mini"]
    max_output_tokens = 16384               # ... and per model, which wins

The key itself is never in the file: only the name of the environment variable that holds it.
Other top-level tables (``[hooks]`` …) are left to their owners. Inside ``[providers]`` every
key is checked, so a typo fails at startup with the file and the key path
(``providers.local.base_url: …``, ``providers.local.model_options."qwen3".context_window: …``),
as ``ConfigError``. What each option does: ``docs/providers.md``; where it is resolved (per
model, per provider, built-in default): ``registry.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, TypeVar

import msgspec

from acp_agent.config_file import ConfigError, decode_toml, read_config_file
from acp_agent.model.openai.settings import EffortField, MaxTokensField, Thinking, ToolChoice

_Positive = Annotated[float, msgspec.Meta(gt=0)]
_Tokens = Annotated[int, msgspec.Meta(gt=0)]
_Price = Annotated[float, msgspec.Meta(ge=0)]
_Retries = Annotated[int, msgspec.Meta(ge=0, le=20)]
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
RESERVED = frozenset({"script", "gguf"})
_S = TypeVar("_S", bound=msgspec.Struct)


class ModelOptions(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """Request options, per provider (``[providers.NAME]``) or per model
    (``[providers.NAME.model_options."MODEL"]``); unset: the next level decides."""

    context_window: _Tokens | None = None
    max_output_tokens: _Tokens | None = None
    tool_choice: ToolChoice | None = None
    images: bool | None = None
    reasoning_echo: bool | None = None
    reasoning_details_echo: bool | None = None
    think_tags: bool | None = None
    thinking: Thinking | None = None
    max_tokens_field: MaxTokensField | None = None
    reasoning_effort_field: EffortField | None = None
    input_price: _Price | None = None
    output_price: _Price | None = None
    local: bool | None = None
    """A server on this machine (llama.cpp, Ollama …): no title requests compete with turns,
    and its window is asked of it (``openai/probe.py``)."""


class ProviderEntry(ModelOptions, frozen=True, forbid_unknown_fields=True):
    base_url: str | None = None
    api_key_env: str | None = None
    models: list[str] = msgspec.field(default_factory=list)
    timeout_s: _Positive | None = None
    connect_timeout_s: _Positive | None = None
    max_retries: _Retries | None = None
    model_options: dict[str, ModelOptions] = msgspec.field(default_factory=dict)


ProvidersConfig = dict[str, ProviderEntry]


def load_providers(path: Path | None) -> ProvidersConfig:
    """The ``[providers]`` table of the config file; ``None`` (no file): none configured."""
    return providers_from(read_config_file(path), path)


def parse_providers(text: str, path: Path) -> ProvidersConfig:
    return providers_from(decode_toml(text, path), path)


def providers_from(data: dict[str, Any], path: Path | None) -> ProvidersConfig:
    """The ``[providers]`` table of a decoded config file (``path`` names it in messages)."""
    if path is None:
        return {}
    table = data.get("providers", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: providers: expected a table of [providers.<name>] tables")
    return {name: _entry(name, value, path) for name, value in table.items()}


def _entry(name: str, value: object, path: Path) -> ProviderEntry:
    where = f"providers.{name}"
    per_model = value.get("model_options") if isinstance(value, dict) else None
    if isinstance(per_model, dict):  # first, so an error names the model
        for model, options in per_model.items():
            _convert(options, ModelOptions, f'{where}.model_options."{model}"', path)
    entry = _convert(value, ProviderEntry, where, path)
    _check(name, entry, path)
    return entry


def _convert(value: object, kind: type[_S], where: str, path: Path) -> _S:
    try:
        return msgspec.convert(value, kind)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {_located(str(exc), where)}") from exc


def _check(name: str, entry: ProviderEntry, path: Path) -> None:
    where = f"{path}: providers.{name}"
    if not _NAME.match(name) or name in RESERVED:
        raise ConfigError(
            f"{where}: a provider name is lowercase letters, digits, '-' and '_' "
            f"(and not {', '.join(sorted(RESERVED))})"
        )
    if entry.base_url is not None and not entry.base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}.base_url: expected an http:// or https:// URL")
    for index, model in enumerate(entry.models):
        if not model.strip():
            raise ConfigError(f"{where}.models[{index}]: empty model name")
    for model in entry.model_options:
        if not model.strip():
            raise ConfigError(f'{where}.model_options."{model}": empty model name')


def _located(message: str, prefix: str) -> str:
    """msgspec's ``"Expected … - at `$.timeout_s`"`` as ``"providers.x.timeout_s: Expected …"``."""
    text, _, where = message.rpartition(" - at `$")
    if not text:
        return f"{prefix}: {message}"
    return f"{prefix}{where.rstrip('`')}: {text}"
