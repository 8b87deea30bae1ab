"""The sandbox through the wire: the real agent (script model) running real commands in the
real sandbox, locally and in a client's terminal, under the default policy and the config
file's; a bad ``[sandbox]`` is refused before any answer; no credential reaches a command."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.integration.support import check_journal, serve_command, turn_updates
from tests.sandbox.support import needs_sandbox
from tests.support.process import agent_command, child_env
from tests.support.recording import RecordingClient, recorded_agent
from tests.tools.support import TerminalClient, call, finals, script

pytestmark = [pytest.mark.subprocess, needs_sandbox]


def results(state_dir: Path, sid: str, workspace: Path) -> list[str]:
    journal = check_journal(state_dir, sid, workspace)
    return [r["content"][0]["text"] for r in journal.of_type("tool/result")]


async def test_by_default_a_command_runs_in_workspace_write(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    calls = [
        call("c1", "run_command", command="echo built > out.txt && cat out.txt"),
        call("c2", "run_command", command=f"cat {state_dir}/sessions/*/journal.jsonl"),
        call("c3", "run_command", command=f"ls {state_dir}"),
    ]
    client = RecordingClient()
    async with recorded_agent(
        client, serve_command(script(tmp_path, *calls)), env=agent_env
    ) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "run")
        updates = turn_updates(agent, sid, "run")
    built, journal, listing = results(state_dir, sid, workspace)
    assert built.startswith("sandbox: workspace-write\n$ echo built")
    assert built.endswith("built\n[exit code 0]")
    assert (workspace / "out.txt").read_text() == "built\n"
    assert "Permission denied" in journal and '"type"' not in journal
    assert "Permission denied" in listing
    assert [u["status"] for u in finals(updates)] == ["completed", "failed", "failed"]


async def test_a_client_terminal_gets_the_sandboxed_argv(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    command = f"touch {tmp_path}/escaped; ls {state_dir}"
    client = TerminalClient(advertise_fs=False)
    run = call("c1", "run_command", command=command)
    async with recorded_agent(client, serve_command(script(tmp_path, run)), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "run")
        updates = turn_updates(agent, sid, "run")
    ((program, args, cwd),) = client.created
    assert Path(program).name == "bwrap" and cwd == str(workspace)
    assert args[-4:] == ["--", "/bin/sh", "-c", command]
    assert (
        "--unshare-net" in args
        and ["--bind", str(workspace), str(workspace)]
        == args[args.index("--bind") : args.index("--bind") + 3]
    )
    assert not (tmp_path / "escaped").exists(), "the client ran it sandboxed"
    (final,) = finals(updates)
    assert final["status"] == "failed"
    (text,) = results(state_dir, sid, workspace)
    assert text.startswith("sandbox: workspace-write\n$ touch")
    assert "Permission denied" in text


def config_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(body, encoding="utf-8")
    return path


async def test_the_config_file_sets_the_policy_and_names_no_key_a_command_sees(
    tmp_path: Path,
    workspace: Path,
    state_dir: Path,
    agent_env: dict[str, str],
) -> None:
    config = config_file(
        tmp_path,
        '[sandbox]\nmode = "read-only"\n\n[providers.local]\n'
        'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "LOCAL_LLM_PASSWORD"\n',
    )
    env = {
        **agent_env,
        "LOCAL_LLM_PASSWORD": "named-secret",
        "SOME_API_KEY": "key-secret",
        "ACP_AGENT_TOKEN": "token-secret",
    }
    run = call("c1", "run_command", command="env; touch here")
    command = serve_command(script(tmp_path, run), "--config", str(config))
    async with recorded_agent(RecordingClient(), command, env=env) as agent:
        sid = await agent.handshake(workspace)
        await agent.prompt_text(sid, "run")
    (text,) = results(state_dir, sid, workspace)
    assert text.startswith("sandbox: read-only\n$ env; touch here\n")
    assert "Read-only file system" in text and not (workspace / "here").exists()
    for secret in ("named-secret", "key-secret", "token-secret"):
        assert secret not in text
    assert "ACP_AGENT_STATE_DIR=" in text, "the rest of the environment is there"


async def test_a_bad_sandbox_mode_exits_2_before_reading_input(
    tmp_path: Path, agent_env: dict[str, str]
) -> None:
    config = config_file(tmp_path, '[sandbox]\nmode = "paranoid"\n')
    process = await asyncio.create_subprocess_exec(
        *agent_command("--config", str(config)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(agent_env),
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert (process.returncode, out) == (2, b"")
    assert err.decode() == (
        f"acp-agent: {config}: sandbox.mode: unknown sandbox mode 'paranoid'; one of read-only, "
        "workspace-write, workspace-write-network, off\n"
    )
