"""MCP servers over HTTP, servers that cannot start, ``sse`` refused, servers stopped on
``session/close`` and on SIGTERM, and ``initialize`` + ``session/new`` without the SDK loaded."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from acp import text_block

from tests.integration.support import (
    check_journal,
    serve_command,
    tool_text,
    turn_updates,
    write_script,
)
from tests.mcp.support import alive, http_server, pids, running_http_server, stdio_server, wait_gone
from tests.mcp.test_wire import call, open_session, tools_of
from tests.support.recording import RawAgent, RecordingClient, recorded_agent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

SECRET = "s3cret-value-7f2a"


async def test_http_server_with_headers_and_stdio_env(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(
        tmp_path / "script.jsonl",
        {
            "toolCalls": [
                call("h", "mcp__web__header", name="x-token"),
                call("v", "mcp__test__env", name="TOKEN"),
            ]
        },
        {"text": "done"},
    )
    with running_http_server() as url:
        servers = [http_server(url, **{"x-token": SECRET}), stdio_server(TOKEN=SECRET)]
        async with recorded_agent(RecordingClient(), serve_command(script), env=agent_env) as agent:
            sid = await open_session(agent, workspace, servers)
            await agent.conn.set_session_mode(session_id=sid, mode_id="read-only")
            assert (
                await agent.conn.prompt(session_id=sid, prompt=[text_block("go")])
            ).stop_reason == "end_turn"
            updates = tools_of(turn_updates(agent, sid, "go"))
            stderr = agent.stderr
    ends = [u for u in updates if u.get("status") == "completed"]
    assert [(u["toolCallId"], tool_text(u)) for u in ends] == [("h", SECRET), ("v", SECRET)]
    assert b"mcp_server_connected" in stderr and SECRET.encode() not in stderr
    header = (state_dir / "sessions" / sid / "journal.jsonl").read_text().splitlines()[0]
    assert SECRET not in header and "<redacted>" in header
    check_journal(state_dir, sid, workspace)


async def test_servers_that_cannot_start_do_not_break_the_turn(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"text": "fine"}, {"text": "still fine"})
    requests = tmp_path / "requests.jsonl"
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(requests)}
    from acp.schema import EnvVariable, McpServerStdio

    missing = McpServerStdio(
        name="ghost",
        command="/no/such/mcp-server",
        args=[],
        env=[EnvVariable(name="K", value=SECRET)],
    )
    closed = http_server("http://127.0.0.1:9/mcp", name="down", authorization=SECRET)
    async with recorded_agent(RecordingClient(), serve_command(script), env=env) as agent:
        sid = await open_session(agent, workspace, [missing, closed, stdio_server()])
        for text in ("one", "two"):
            assert (
                await agent.conn.prompt(session_id=sid, prompt=[text_block(text)])
            ).stop_reason == "end_turn"
        stderr = agent.stderr
    tools = read_requests(requests)[0]["tools"]
    assert "mcp__test__echo" in tools and not any("ghost" in t or "down" in t for t in tools)
    failures = [json.loads(line) for line in stderr.splitlines() if b"mcp_server_failed" in line]
    assert sorted(f["server"] for f in failures) == ["down", "ghost"]  # once each, not per turn
    assert SECRET.encode() not in stderr


async def test_sse_is_refused_naming_the_path_and_nothing_is_created(
    workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    sse = {"type": "sse", "name": "old", "url": "http://127.0.0.1:9/sse", "headers": []}
    async with RawAgent(env=agent_env) as agent:
        init = await agent.request("initialize", {"protocolVersion": 1})
        assert init["result"]["agentCapabilities"]["mcpCapabilities"] == {
            "http": True,
            "sse": False,
        }
        params = {
            "cwd": str(workspace),
            "mcpServers": [sse],
            "_meta": {"acp_agent": {"sessionId": "x"}},
        }
        refused = await agent.request("session/new", params)
        assert refused["error"]["code"] == -32602
        assert refused["error"]["data"]["path"] == "$.mcpServers[0].type"
        bad = {**params, "mcpServers": [{"name": "no-command"}]}
        assert (await agent.request("session/new", bad))["error"]["data"][
            "path"
        ] == "$.mcpServers[0]"
    assert not (state_dir / "sessions" / "x").exists()


async def test_session_close_stops_the_server(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    pid_file = tmp_path / "pids"
    script = write_script(tmp_path / "script.jsonl", {"text": "hi"})
    async with recorded_agent(
        RecordingClient(), serve_command(script), env=agent_env, use_unstable_protocol=True
    ) as agent:
        sid = await open_session(agent, workspace, [stdio_server(pid_file=pid_file)])
        await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
        (pid,) = pids(pid_file)
        assert alive(pid)
        await agent.conn.close_session(session_id=sid)
        assert wait_gone(pid, 5), "session/close left the MCP server running"
        assert agent.process.returncode is None


async def test_sigterm_stops_the_servers(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    pid_file = tmp_path / "pids"
    script = write_script(tmp_path / "script.jsonl", {"text": "hi"}, {"text": "hi"})
    async with recorded_agent(RecordingClient(), serve_command(script), env=agent_env) as agent:
        for _ in range(2):
            sid = await open_session(agent, workspace, [stdio_server(pid_file=pid_file)])
            await agent.conn.prompt(session_id=sid, prompt=[text_block("hi")])
        assert len(pids(pid_file)) == 2
        agent.process.send_signal(signal.SIGTERM)
        assert await agent.process.wait() == 0
    assert all(wait_gone(pid, 5) for pid in pids(pid_file))


STARTUP_PROBE = """
import atexit, json, sys
REPORT = sys.argv[1]
def report():
    stacks = ("mcp", "mcp_types", "pydantic", "pydantic_core", "starlette", "httpx2", "uvicorn")
    loaded = sorted(m for m in sys.modules if m.split(".")[0] in stacks)
    with open(REPORT, "w") as out:
        json.dump(loaded, out)
atexit.register(report)
sys.argv = ["acp-agent", "--model", sys.argv[2]]
from acp_agent.cli import main
sys.exit(main())
"""


def test_initialize_and_session_new_do_not_import_the_mcp_sdk(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"text": "unused"})
    server = stdio_server().model_dump(by_alias=True, exclude_none=True)
    frames = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "session/new",
            "params": {"cwd": str(workspace), "mcpServers": [server]},
        },
    ]
    report = tmp_path / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", STARTUP_PROBE, str(report), f"script:{script}"],
        cwd=tmp_path,
        input="".join(json.dumps(frame) + "\n" for frame in frames).encode(),
        capture_output=True,
        timeout=30,
        env={**os.environ, **agent_env},
    )
    assert done.returncode == 0, done.stderr.decode()
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert any("sessionId" in a.get("result", {}) for a in answers), answers
    assert json.loads(report.read_text()) == []
