"""The config file: where it comes from, whether its ``[hooks]``, ``[providers]`` and
``[permissions]`` parse.

The loaders are the server's own (``hooks/config.py``, ``model/config.py``), so a file that
passes here is a file the server starts with, and the error messages are the ones it would
print. A hook whose program cannot be found is a problem too: it would fail at every call.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from pathlib import Path

from acp_agent.config_file import ConfigError, read_config_file
from acp_agent.doctor.report import Finding, Section, Status
from acp_agent.hooks.command import CommandHook
from acp_agent.hooks.config import HooksConfig, load_config
from acp_agent.model.config import ProvidersConfig, load_providers

CONFIG_ENV = "ACP_AGENT_CONFIG"


def config_section(path: Path | None, flag: str | None, env: Mapping[str, str]) -> Section:
    findings = [_where(path, flag, env)]
    if path is not None:
        findings += _hooks(path)
        findings.append(_providers(path))
        findings.append(_permissions(path))
    return Section("config", "config file", findings)


def _where(path: Path | None, flag: str | None, env: Mapping[str, str]) -> Finding:
    if path is None:
        default = Path("~/.config/acp-agent/config.toml")
        message = f"no config file ({default} does not exist): no hooks, built-in providers only"
        return Finding(Status.OK, "config.file", message)
    if flag is None:
        source = "the default"
    elif env.get(CONFIG_ENV) == flag:
        source = CONFIG_ENV
    else:
        source = "--config"
    if not path.is_file():
        return Finding(Status.PROBLEM, "config.file", f"{path} (from {source}) does not exist")
    return Finding(Status.OK, "config.file", f"{path} (from {source})")


def _hooks(path: Path) -> list[Finding]:
    try:
        hooks = load_config(path).hooks
    except ConfigError as exc:
        return [Finding(Status.PROBLEM, "config.hooks", f"[hooks]: {exc}")]
    counts = ", ".join(
        f"{len(getattr(hooks, kind))} {kind}" for kind in ("prompt_submit", "pre_tool", "post_tool")
    )
    return [Finding(Status.OK, "config.hooks", f"[hooks] parses: {counts}"), *_programs(hooks)]


def _programs(hooks: HooksConfig) -> list[Finding]:
    findings = []
    for kind, entries in (
        ("prompt_submit", hooks.prompt_submit),
        ("pre_tool", hooks.pre_tool),
        ("post_tool", hooks.post_tool),
    ):
        for index, hook in enumerate(entries):
            if not _runnable(hook):
                message = f"hooks.{kind}[{index}]: program {hook.command[0]!r} not found"
                findings.append(Finding(Status.PROBLEM, "config.hook_program", message))
    return findings


def _runnable(hook: CommandHook) -> bool:
    return shutil.which(hook.command[0]) is not None


def _providers(path: Path) -> Finding:
    try:
        providers = load_providers(path)
    except ConfigError as exc:
        return Finding(Status.PROBLEM, "config.providers", f"[providers]: {exc}")
    return Finding(Status.OK, "config.providers", f"[providers] parses: {_describe(providers)}")


def _permissions(path: Path) -> Finding:
    from acp_agent.permissions.config import rules_from

    try:
        rules = rules_from(read_config_file(path), path)
    except ConfigError as exc:
        return Finding(Status.PROBLEM, "config.permissions", f"[permissions]: {exc}")
    counts = ", ".join(
        f"{sum(r.effect == effect for r in rules)} {effect}" for effect in ("allow", "ask", "deny")
    )
    return Finding(Status.OK, "config.permissions", f"[permissions] parses: {counts}")


def _describe(providers: ProvidersConfig) -> str:
    if not providers:
        return "no provider tables"
    return ", ".join(
        f"{name} ({len(entry.models)} model{'' if len(entry.models) == 1 else 's'})"
        for name, entry in providers.items()
    )


def loaded_providers(path: Path | None) -> ProvidersConfig | None:
    """The providers for the model checks; ``None`` when the file does not parse."""
    try:
        return load_providers(path)
    except ConfigError:
        return None
