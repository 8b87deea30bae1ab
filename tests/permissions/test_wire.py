"""Permission rules through the wire: the real agent process, the script model, the official
Python SDK client (``recorded_agent``). "Always allow in this project" outlives the process,
for the same cwd only; ``/permissions`` lists and removes; config rules (deny in full-access
too); rules planted inside the repository count for nothing; a bad rule stops the start."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.support import serve_command, tool_text, turn_updates, write_script
from tests.support.process import agent_command, child_env
from tests.support.recording import RecordingClient, recorded_agent
from tests.tools.support import call, finals

pytestmark = pytest.mark.subprocess


def steps(path: Path, *commands: str) -> Path:
    """One ``run_command`` then "done" per prompt."""
    lines: list[dict[str, Any]] = []
    for number, command in enumerate(commands, 1):
        lines += [
            {"toolCalls": [call(f"c{number}", "run_command", command=command)]},
            {"text": "done"},
        ]
    return write_script(path, *lines)


def config_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


async def test_allow_project_holds_for_later_processes_of_the_same_cwd_only(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    first = RecordingClient(advertise_fs=False, permission="allow_project")
    script = steps(tmp_path / "one.jsonl", "echo one > one.txt")
    async with recorded_agent(first, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "go")
    (asked,) = first.permission_requests
    offered = [(o.option_id, o.kind, o.name) for o in asked.options]
    assert (
        "allow_project",
        "allow_always",
        "Always allow the command `echo one > one.txt` in this project",
    ) in offered
    assert (workspace / "one.txt").read_text(encoding="utf-8") == "one\n"
    (saved,) = (state_dir / "permissions").glob("*.json")
    assert json.loads(saved.read_text(encoding="utf-8"))["cwd"] == str(workspace)

    # a new process, the same cwd: not asked; /permissions lists the rule, removes it, asks again
    later = RecordingClient(advertise_fs=False, permission="reject_once")
    script = steps(tmp_path / "two.jsonl", "echo one > one.txt", "echo one > one.txt")
    async with recorded_agent(later, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "again")
        (final,) = finals(turn_updates(agent, sid, "again"))
        assert final["status"] == "completed" and later.permission_requests == []
        await agent.prompt_text(sid, "/permissions")
        await agent.prompt_text(sid, "/permissions remove 1")
        await agent.prompt_text(sid, "and again")
    text = later.agent_text(sid)
    assert "1. allow run_command(echo one) [project]" in text
    assert "Removed rule 1: allow run_command(echo one) [project]." in text
    assert "No permission rules: the mode decides every call." in text
    assert [r.tool_call.tool_call_id for r in later.permission_requests] == ["c2"]
    assert json.loads(saved.read_text(encoding="utf-8"))["rules"] == []


async def test_a_project_rule_does_not_reach_another_cwd(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    other = tmp_path / "other"
    other.mkdir()
    for cwd, answer in (
        (workspace, "allow_project"),
        (other, "reject_once"),
        (workspace, "reject_once"),
    ):
        client = RecordingClient(advertise_fs=False, permission=answer)
        script = steps(tmp_path / f"{answer}.jsonl", "git --version")
        async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
            sid = await agent.handshake(cwd)
            await agent.prompt_text(sid, "go")
        asked = len(client.permission_requests)
        assert asked == (0 if (cwd, answer) == (workspace, "reject_once") else 1), (cwd, answer)


async def test_rules_planted_inside_the_repository_are_ignored(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    allow = 'allow = ["run_command(touch *)"]\n'
    (workspace / ".acp-agent").mkdir()
    (workspace / ".acp-agent" / "config.toml").write_text(
        f"[permissions]\n{allow}", encoding="utf-8"
    )
    (workspace / "acp-agent.toml").write_text(f"[permissions]\n{allow}", encoding="utf-8")
    (workspace / ".claude").mkdir()
    settings = {"permissions": {"allow": ["Bash(touch *)", "run_command(touch *)"]}}
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
    (workspace / "AGENTS.md").write_text(f"[permissions]\n{allow}", encoding="utf-8")
    client = RecordingClient(advertise_fs=False, permission="reject_once")
    script = steps(tmp_path / "s.jsonl", "touch planted")
    async with recorded_agent(client, serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "go")
        await agent.prompt_text(sid, "/permissions")
    assert len(client.permission_requests) == 1 and not (workspace / "planted").exists()
    assert "No permission rules" in client.agent_text(sid)


async def test_config_rules_allow_deny_in_full_access_and_cannot_be_removed(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    config = config_file(
        tmp_path,
        '[permissions]\nallow = ["run_command(ls *)"]\ndeny = ["run_command(touch *)"]\n',
    )
    client = RecordingClient(advertise_fs=False, permission="allow_once")
    script = steps(tmp_path / "s.jsonl", "ls -a", "echo a && touch denied")
    command = serve_command(script, "--config", str(config))
    async with recorded_agent(client, command, env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "list")
        await agent.conn.set_session_mode(session_id=sid, mode_id="full-access")
        await agent.prompt_text(sid, "touch")
        (listed,) = finals(turn_updates(agent, sid, "list"))
        denied = finals(turn_updates(agent, sid, "touch"))[-1]  # updates since the start
        await agent.prompt_text(sid, "/permissions")
        await agent.prompt_text(sid, "/permissions remove 2")
    assert listed["status"] == "completed" and client.permission_requests == []
    assert denied["status"] == "failed"
    assert tool_text(denied).startswith(
        "permission denied: the rule deny run_command(touch *) (config) refuses it"
    )
    assert not (workspace / "denied").exists()
    text = client.agent_text(sid)
    assert "1. deny run_command(touch *) [config]\n2. allow run_command(ls *) [config]" in text
    assert (
        f"Not removed: rule 2 (allow run_command(ls *)) comes from the config file ({config})"
        in text
    )


def test_a_bad_rule_stops_the_start_before_the_first_answer(
    tmp_path: Path, agent_env: dict[str, str]
) -> None:
    config = config_file(tmp_path, '[permissions]\ndeny = ["run_command(rm *)", "rm -rf"]\n')
    first = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}
    )
    done = subprocess.run(
        agent_command("--model", "script:/dev/null", "--config", str(config)),
        input=first + "\n",
        capture_output=True,
        text=True,
        env=child_env(agent_env),
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert f"{config}: permissions.deny[1]: 'rm -rf' is not a pattern" in done.stderr
