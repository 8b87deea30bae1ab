"""The config file's ``[web_fetch]`` table: what ``web_fetch`` may reach (``web_address.py``).

``allow_private = true`` lets it fetch loopback, private, link-local and cloud-metadata
addresses, in every mode; by default they are refused. Any other key, or a value that is not
a boolean, is a ``ConfigError`` naming the file and the key. Imported while the server checks
its configuration, before ``initialize`` is answered: msgspec and ``config_file`` only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from acp_agent.config_file import ConfigError


class WebFetchSettings(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    allow_private: bool = False
    """Fetch loopback, private, link-local and metadata addresses too (a local dev server)."""


def web_fetch_settings_from(data: dict[str, Any], path: Path | None) -> WebFetchSettings:
    """The ``[web_fetch]`` table of a decoded config file (defaults without one)."""
    if "web_fetch" not in data:
        return WebFetchSettings()
    try:
        return msgspec.convert(data["web_fetch"], WebFetchSettings)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: web_fetch: {exc}") from exc
