"""The config file's ``[permissions]`` table:

    [permissions]
    allow = ["run_command(git status)", "run_command(pytest *)", "edit(src/**)"]
    ask = ["run_command(git push *)"]
    deny = ["run_command(rm *)", "read(.env)", "web_fetch(*.internal.example)"]

Every entry is checked when the server starts (``launch.checked_setup``), before the first
answer: an unknown key, a value that is not a list of strings or a pattern that does not parse
is a ``ConfigError`` naming the file and the entry (``permissions.deny[1]: …``). ``doctor``
reports the same message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from acp_agent.config_file import ConfigError
from acp_agent.permissions.patterns import PatternError, parse_pattern
from acp_agent.permissions.rules import Effect, Rule, Source

TABLE = "permissions"


class PermissionsTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """``[permissions]``: lists of patterns (``run_command(PREFIX)``, ``edit(GLOB)``,
    ``read(GLOB)``, ``web_fetch(HOST)``, ``mcp(SERVER/TOOL)``). Precedence: deny, then ask,
    then allow, then the mode's default; ``deny`` holds in every mode."""

    allow: list[str] = []
    ask: list[str] = []
    deny: list[str] = []


def rules_from(config: dict[str, Any], path: Path | None) -> tuple[Rule, ...]:
    """The rules of a decoded config file (``path`` names it in messages)."""
    table = config.get(TABLE)
    if table is None:
        return ()
    where = f"{path}: " if path is not None else ""
    if not isinstance(table, dict):
        raise ConfigError(f"{where}{TABLE}: expected a table with allow, ask and deny lists")
    unknown = sorted(set(table) - {str(e) for e in Effect})
    if unknown:
        raise ConfigError(f"{where}{TABLE}.{unknown[0]}: unknown key (expected allow, ask or deny)")
    rules: list[Rule] = []
    for effect in (Effect.DENY, Effect.ASK, Effect.ALLOW):
        rules.extend(_entries(table.get(str(effect), []), effect, where))
    return tuple(rules)


def _entries(entries: object, effect: Effect, where: str) -> list[Rule]:
    key = f"{TABLE}.{effect}"
    if not isinstance(entries, list):
        raise ConfigError(f"{where}{key}: expected a list of patterns, got {entries!r}")
    rules = []
    for index, entry in enumerate(entries):
        if not isinstance(entry, str):
            raise ConfigError(f"{where}{key}[{index}]: expected a pattern string, got {entry!r}")
        try:
            rules.append(Rule(effect, parse_pattern(entry), Source.CONFIG))
        except PatternError as exc:
            raise ConfigError(f"{where}{key}[{index}]: {exc}") from exc
    return rules
