"""The config file (TOML): the ``[providers]`` part.

    [providers.openai]                      # built-in: openai, deepseek; any other name is new
    base_url = "https://api.openai.com/v1"  # the API root; POST <base_url>/chat/completions
    api_key_env = "OPENAI_API_KEY"          # the variable holding the key ("" : no key needed)
    models = ["gpt-4.1", "gpt-4.1-mini"]    # offered in the session's model selector
    timeout_s = 600                         # longest silence while reading a stream
    connect_timeout_s = 10
    max_retries = 3                         # retries on 408/409/429/5xx and connection errors

The key itself is never in the file: only the name of the environment variable that holds it.
Other top-level tables (``[hooks]`` …) are left to their owners. Inside ``[providers]`` every
key is checked, so a typo fails at startup with the file and the key path
(``providers.local.base_url: …``), as ``ConfigError``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import msgspec

from acp_agent.config_file import ConfigError, decode_toml, read_config_file

_Positive = Annotated[float, msgspec.Meta(gt=0)]
_Retries = Annotated[int, msgspec.Meta(ge=0, le=20)]
_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
RESERVED = frozenset({"script"})


class ProviderEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    base_url: str | None = None
    api_key_env: str | None = None
    models: list[str] = msgspec.field(default_factory=list)
    timeout_s: _Positive | None = None
    connect_timeout_s: _Positive | None = None
    max_retries: _Retries | None = None


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
    try:
        entry = msgspec.convert(value, ProviderEntry)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {_located(str(exc), f'providers.{name}')}") from exc
    _check(name, entry, path)
    return entry


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


def _located(message: str, prefix: str) -> str:
    """msgspec's ``"Expected … - at `$.timeout_s`"`` as ``"providers.x.timeout_s: Expected …"``."""
    text, _, where = message.rpartition(" - at `$")
    if not text:
        return f"{prefix}: {message}"
    return f"{prefix}{where.rstrip('`')}: {text}"
