"""The config file (``--config``, TOML): reading it once, and the one error its checks raise.

Each top-level table has its owner, which checks it: ``[hooks]`` in ``hooks/config.py``,
``[providers]`` in ``model/config.py``. The server reads the file once (``read_config_file``) and
hands the decoded document to both. This module imports nothing of the project's, so every layer
may depend on it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ConfigError(Exception):
    """The config file cannot be used; the message names the file and the key path."""


def read_config_file(path: Path | None) -> dict[str, Any]:
    """The config file's TOML document (``{}`` for no file); ``ConfigError`` naming the file
    when it cannot be read or is not TOML. Its tables are checked by ``hooks.config.config_from``
    and ``model.config.providers_from``: one read serves both."""
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the config file: {exc}") from exc
    return decode_toml(text, path)


def decode_toml(text: str, path: Path) -> dict[str, Any]:
    import tomllib  # only with a config file: no start-up cost without one

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
