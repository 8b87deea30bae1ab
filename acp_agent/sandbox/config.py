"""The config file's ``[sandbox]`` table.

    [sandbox]
    mode = "workspace-write"   # or "read-only", "workspace-write-network", "off"

No table, or no ``mode``: the default (``workspace-write`` where a sandbox can start, else
``off``). Any other key or value is a ``ConfigError`` naming the file and the key, reported
before the first answer like every config error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from acp_agent.config_file import ConfigError
from acp_agent.sandbox.policy import SandboxPolicy, known_policies, parse_policy


class SandboxConfig(msgspec.Struct, frozen=True):
    mode: SandboxPolicy | None = None
    """``None``: the default."""


def sandbox_config_from(data: dict[str, Any], path: Path | None) -> SandboxConfig:
    table = data.get("sandbox")
    if table is None or path is None:
        return SandboxConfig()
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: sandbox: expected a table ([sandbox])")
    unknown = sorted(set(table) - {"mode"})
    if unknown:
        raise ConfigError(f"{path}: sandbox.{unknown[0]}: unknown key; [sandbox] has: mode")
    if "mode" not in table:
        return SandboxConfig()
    mode = parse_policy(table["mode"])
    if mode is None:
        raise ConfigError(
            f"{path}: sandbox.mode: unknown sandbox mode {table['mode']!r}; "
            f"one of {known_policies()}"
        )
    return SandboxConfig(mode)
