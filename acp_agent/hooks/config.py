"""The config file (TOML): the ``[hooks]`` part.

    [[hooks.prompt_submit]]        # also hooks.pre_tool, hooks.post_tool
    command = ["python3", "/abs/hook.py"]   # required, non-empty argv; no shell
    timeout_ms = 5000                       # int > 0
    matcher = "read_file"                   # tool hooks only: regex, must match the whole name
    fail = "open"                           # or "closed"

Other top-level tables (``[providers]``, ``[tools]`` …) are left to their owners and ignored
here. Inside ``[hooks]`` everything is checked: an unknown hook kind or an unknown key in an
entry is an error, so a typo never silently disables a guard. Errors are ``ConfigError``s that
name the file and the key path (``hooks.pre_tool[1].matcher: …``); reading the file is
``config_file.py``'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec

from acp_agent.config_file import ConfigError, decode_toml, read_config_file
from acp_agent.hooks.command import DEFAULT_TIMEOUT_MS, CommandHook
from acp_agent.hooks.kinds import FailPolicy, HookKind

_Argv = Annotated[list[Annotated[str, msgspec.Meta(min_length=1)]], msgspec.Meta(min_length=1)]
_Timeout = Annotated[int, msgspec.Meta(gt=0)]


class _PromptEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    command: _Argv
    timeout_ms: _Timeout = DEFAULT_TIMEOUT_MS
    fail: FailPolicy = FailPolicy.OPEN


class _ToolEntry(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    command: _Argv
    timeout_ms: _Timeout = DEFAULT_TIMEOUT_MS
    matcher: str | None = None
    fail: FailPolicy = FailPolicy.OPEN


class _HooksTable(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    prompt_submit: list[_PromptEntry] = []
    pre_tool: list[_ToolEntry] = []
    post_tool: list[_ToolEntry] = []


class _File(msgspec.Struct, frozen=True):
    hooks: _HooksTable = _HooksTable()


ConfigFile = _File
"""The config file's shape (other top-level tables are allowed); ``schemas/config.schema.json``."""


@dataclass(frozen=True)
class HooksConfig:
    """The configured command hooks of each kind, in file order."""

    prompt_submit: tuple[CommandHook, ...] = ()
    pre_tool: tuple[CommandHook, ...] = ()
    post_tool: tuple[CommandHook, ...] = ()


@dataclass(frozen=True)
class Config:
    """The parsed config file (``path`` is ``None`` for the empty config)."""

    hooks: HooksConfig = field(default_factory=HooksConfig)
    path: Path | None = None


def load_config(path: Path | None) -> Config:
    """Read and check a config file; ``None`` means no file, the empty config."""
    return config_from(read_config_file(path), path)


def parse_config(text: str, path: Path) -> Config:
    return config_from(decode_toml(text, path), path)


def config_from(data: dict[str, Any], path: Path | None) -> Config:
    """The hooks of a decoded config file (``path`` names it in messages)."""
    if path is None:
        return Config()
    try:
        raw = msgspec.convert(data, _File)
    except msgspec.ValidationError as exc:
        raise ConfigError(f"{path}: {_located(str(exc))}") from exc
    return Config(_hooks(raw.hooks, path), path)


def _hooks(table: _HooksTable, path: Path) -> HooksConfig:
    prompt = tuple(
        CommandHook(HookKind.PROMPT_SUBMIT, tuple(e.command), e.timeout_ms, e.fail)
        for e in table.prompt_submit
    )
    return HooksConfig(
        prompt,
        _tool_hooks(HookKind.PRE_TOOL, table.pre_tool, path),
        _tool_hooks(HookKind.POST_TOOL, table.post_tool, path),
    )


def _tool_hooks(kind: HookKind, entries: list[_ToolEntry], path: Path) -> tuple[CommandHook, ...]:
    hooks = []
    for index, entry in enumerate(entries):
        matcher = _matcher(entry.matcher, f"hooks.{kind}[{index}].matcher", path)
        hooks.append(CommandHook(kind, tuple(entry.command), entry.timeout_ms, entry.fail, matcher))
    return tuple(hooks)


def _matcher(pattern: str | None, key: str, path: Path) -> re.Pattern[str] | None:
    """Compile a matcher. ``"*"`` and ``""`` match every tool (Claude Code's spelling)."""
    if pattern is None or pattern in ("", "*"):
        return None
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ConfigError(f"{path}: {key}: invalid regular expression {pattern!r}: {exc}") from exc


def _located(message: str) -> str:
    """msgspec's ``"Expected … - at `$.hooks.x[0]`"`` as ``"hooks.x[0]: Expected …"``."""
    text, sep, where = message.rpartition(" - at `$")
    if not sep:
        return message
    key = where.rstrip("`").removeprefix(".")
    if key.endswith(".fail"):
        text += f" (expected one of {', '.join(repr(str(p)) for p in FailPolicy)})"
    return f"{key}: {text}" if key else text
