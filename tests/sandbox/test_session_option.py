"""The session config option ``sandbox``: offered with every session, set with
``session/set_config_option`` (announced with ``config_option_update``), kept like the mode
across load, resume and fork, an unknown value -32602 — and the Python API sets it the same
way, since it is the one session layer. Through it, over the wire: the network only under
``workspace-write-network``; and a sandboxed command ends with an agent killed -9."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any

import pytest

from acp_agent.api import Agent
from acp_agent.journal.events import ToolResult
from acp_agent.model.script import ScriptModel
from acp_agent.sandbox.policy import SandboxPolicy
from acp_agent.tools.permissions import Mode, Permissions
from acp_agent.tools.registry import coding_tools
from tests.integration.support import tool_text, wait_until
from tests.sandbox.support import DEFAULT_POLICY, needs_sandbox
from tests.session.support import lines
from tests.support.recording import RawAgent, agent_command

SID = "boxed"
TOUCH = {"toolCalls": [{"id": "c1", "name": "run_command", "arguments": {"command": "touch made"}}]}


def script(tmp_path: Path) -> Path:
    path = tmp_path / "script.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in [TOUCH, {"text": "done"}] * 3))
    return path


def new(cwd: Path) -> dict[str, Any]:
    return {"cwd": str(cwd), "mcpServers": [], "_meta": {"acp_agent": {"sessionId": SID}}}


def reopen(cwd: Path) -> dict[str, Any]:
    return {"sessionId": SID, "cwd": str(cwd), "mcpServers": []}


def sandbox_of(result: dict[str, Any]) -> dict[str, Any]:
    (option,) = [o for o in result["configOptions"] if o["id"] == "sandbox"]
    return option  # type: ignore[no-any-return]


async def touch(agent: RawAgent) -> str:
    """Prompt once: the script's next command runs; its result's text (the final update)."""
    params = {"sessionId": SID, "prompt": [{"type": "text", "text": "touch"}]}
    assert (await agent.request("session/prompt", params))["result"]["stopReason"] == "end_turn"
    updates = [f["params"]["update"] for f in agent.skipped if f.get("method") == "session/update"]
    (final,) = [u for u in updates if u.get("status") in ("completed", "failed")]
    agent.skipped.clear()
    return tool_text(final)


@pytest.mark.subprocess
async def test_a_new_session_offers_every_policy_its_default_current(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    async with RawAgent(
        agent_command("--model", f"script:{script(tmp_path)}"), env=agent_env
    ) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        created = (await agent.request("session/new", new(workspace)))["result"]
    option = sandbox_of(created)
    assert option["currentValue"] == str(DEFAULT_POLICY)
    assert [o["value"] for o in option["options"]] == [
        "read-only",
        "workspace-write",
        "workspace-write-network",
        "off",
    ]


@pytest.mark.subprocess
@needs_sandbox
@pytest.mark.parametrize("method", ["session/load", "session/resume"])
async def test_the_policy_is_set_announced_enforced_and_kept(
    method: str, tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    command = agent_command("--model", f"script:{script(tmp_path)}")
    async with RawAgent(command, env=agent_env) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await agent.request("session/new", new(workspace))
        await agent.request("session/set_mode", {"sessionId": SID, "modeId": "full-access"})
        change = {"sessionId": SID, "configId": "sandbox", "value": "read-only"}
        answer = (await agent.request("session/set_config_option", change))["result"]
        assert sandbox_of(answer)["currentValue"] == "read-only"
        announced = await agent.recv()
        assert announced["params"]["update"]["sessionUpdate"] == "config_option_update"
        assert sandbox_of(announced["params"]["update"])["currentValue"] == "read-only"
        agent.skipped.clear()
        shown = await touch(agent)
    assert "sandbox: read-only" in shown and "Read-only file system" in shown
    assert not (workspace / "made").exists()
    settings = json.loads((state_dir / "sessions" / SID / "settings.json").read_text())
    assert settings == {"mode": "full-access", "sandbox": "read-only"}

    async with RawAgent(command, env=agent_env) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        reopened = (await agent.request(method, reopen(workspace)))["result"]
        assert sandbox_of(reopened)["currentValue"] == "read-only"
        agent.skipped.clear()
        shown = await touch(agent)
        assert "sandbox: read-only" in shown and not (workspace / "made").exists()
        change = {"sessionId": SID, "configId": "sandbox", "value": "workspace-write"}
        await agent.request("session/set_config_option", change)
        agent.skipped.clear()
        shown = await touch(agent)
    assert "sandbox: workspace-write" in shown and (workspace / "made").exists()


@pytest.mark.subprocess
async def test_an_unknown_policy_is_invalid_params(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    async with RawAgent(
        agent_command("--model", f"script:{script(tmp_path)}"), env=agent_env
    ) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await agent.request("session/new", new(workspace))
        change = {"sessionId": SID, "configId": "sandbox", "value": "strict"}
        refused = await agent.request("session/set_config_option", change)
    assert refused["error"]["code"] == -32602
    assert refused["error"]["data"]["path"] == "$.value"
    assert "unknown sandbox policy 'strict'" in refused["error"]["message"]
    assert not (state_dir / "sessions" / SID / "settings.json").exists()


@needs_sandbox
async def test_the_python_api_sets_the_policy_and_a_reopened_session_keeps_it(
    tmp_path: Path, workspace: Path
) -> None:
    model = ScriptModel.from_lines(lines(*[json.dumps(TOUCH), '{"text": "done"}'] * 2))
    state = tmp_path / "state"

    def full_access(header: object) -> Permissions:
        return Permissions(Mode.FULL_ACCESS)

    async with Agent.open(
        state, model, tools=lambda _: coding_tools(), permissions=full_access
    ) as agent:
        session = await agent.new_session(workspace)
        assert session.sandbox is SandboxPolicy.WORKSPACE_WRITE
        await session.set_sandbox(SandboxPolicy.READ_ONLY)
        await (await session.send("touch")).outcome()
        sid = session.id
    async with Agent.open(
        state, model, tools=lambda _: coding_tools(), permissions=full_access
    ) as agent:
        session = await agent.open_session(sid)
        assert session.sandbox is SandboxPolicy.READ_ONLY
        await (await session.send("touch")).outcome()
        results = [e.event for e in session.entries if isinstance(e.event, ToolResult)]
    assert len(results) == 2
    for result in results:
        (block,) = result.content
        assert block.text.startswith("sandbox: read-only\n")  # type: ignore[union-attr]
    assert not (workspace / "made").exists()


@pytest.mark.subprocess
@needs_sandbox
async def test_the_network_comes_with_workspace_write_network_only(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        connect = (
            f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 5)\""
        )
        call = {
            "toolCalls": [{"id": "n1", "name": "run_command", "arguments": {"command": connect}}]
        }
        path = tmp_path / "network.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in [call, {"text": "ok"}] * 2))
        async with RawAgent(agent_command("--model", f"script:{path}"), env=agent_env) as agent:
            await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
            await agent.request("session/new", new(workspace))
            await agent.request("session/set_mode", {"sessionId": SID, "modeId": "full-access"})
            agent.skipped.clear()
            refused = await touch(agent)
            change = {"sessionId": SID, "configId": "sandbox", "value": "workspace-write-network"}
            await agent.request("session/set_config_option", change)
            agent.skipped.clear()
            reached = await touch(agent)
        listener.setblocking(False)
        connection, _ = listener.accept()  # the second command's, waiting in the backlog
        connection.close()
        with pytest.raises(BlockingIOError):
            listener.accept()  # and only that one: the first never reached the host
    assert refused.startswith("sandbox: workspace-write\n") and "ConnectionRefusedError" in refused
    assert reached.startswith("sandbox: workspace-write-network\n")
    assert reached.endswith("[exit code 0]")


def running(marker: str) -> bool:
    """The ``sleep`` itself runs (anchored: bwrap's and the shell's command lines name it too,
    and bwrap's appears before it has armed ``--die-with-parent``)."""
    found = subprocess.run(["pgrep", "-f", f"^sleep {marker}"], capture_output=True, check=False)
    return found.returncode == 0


@pytest.mark.subprocess
@needs_sandbox
async def test_a_sandboxed_command_does_not_outlive_an_agent_killed_9(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    """``--die-with-parent``: the agent gone (SIGKILL, no clean-up of its own), bwrap and all
    inside it go too — where an unsandboxed command's group would live on."""
    if shutil.which("pgrep") is None:
        pytest.skip("no pgrep here")
    marker = "4242.4242"
    sleep = {"id": "k1", "name": "run_command", "arguments": {"command": f"sleep {marker}"}}
    path = tmp_path / "sleep.jsonl"
    path.write_text(json.dumps({"toolCalls": [sleep]}) + "\n")
    command = agent_command("--model", f"script:{path}")
    async with RawAgent(command, env=agent_env, expect_exit_code=None, validate=False) as agent:
        await agent.request("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        await agent.request("session/new", new(workspace))
        await agent.request("session/set_mode", {"sessionId": SID, "modeId": "full-access"})
        prompt = {"sessionId": SID, "prompt": [{"type": "text", "text": "sleep"}]}
        await agent.send({"jsonrpc": "2.0", "id": 99, "method": "session/prompt", "params": prompt})
        await wait_until(lambda: running(marker), "the sandboxed sleep to run")
        agent.process.kill()
        await agent.process.wait()
        await wait_until(lambda: not running(marker), "the sandboxed sleep to end with the agent")
