"""Start-up: ``initialize`` is answered before the server's heavy stacks are imported.

``acp_agent/launch.py`` answers a first ``initialize`` with only the modules its answer needs;
the rest (sessions, journal, tools, providers, anyio and asyncio, structlog) is imported after.
These tests hold that without timing anything (tests never assert times; the figure is in
``docs/benchmarks.md``): the agent writes the modules it had imported when it answered
(``ACP_AGENT_REPORT_MODULES``), and the test names the ones that must not be there. They also
hold that answering early changes nothing a client can see: the early answer is the router's
answer, the bytes read early reach the connection, a first line that is not ``initialize`` is
answered as ever, signals before the event loop still end the process with 0
(docs/contract.md §1), and a bad config still exits 2 before any input is read.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import pytest

from tests.integration.support import initialize, line, new_session, request, write_script
from tests.support.process import agent_command, child_env
from tests.support.recording import RawAgent

pytestmark = pytest.mark.subprocess

NOT_BEFORE_INITIALIZE = [
    # the event loop and logging: the bulk of the start-up's imports
    "anyio",
    "asyncio",
    "structlog",
    "logging",
    # the HTTP stack and the MCP SDK (pydantic)
    "httpx",
    "ssl",
    "mcp",
    "pydantic",
    # what msgspec would import with typing_extensions (acp_agent/lean_imports.py)
    "typing_extensions",
    "inspect",
    # the server's own stacks
    "acp_agent.app",
    "acp_agent.acp.schema",  # the initialize part is acp/schema_initialize.py
    "acp_agent.acp.server",
    "acp_agent.acp.observer",
    "acp_agent.acp.projection",
    "acp_agent.session.service",
    "acp_agent.turn.actor",
    "acp_agent.turn.machine",
    "acp_agent.journal.writer",
    "acp_agent.journal.events",
    "acp_agent.tools.registry",
    "acp_agent.hooks.bridge",
    "acp_agent.mcp.hub",
    "acp_agent.model.base",
    "acp_agent.model.openai.provider",
    "acp_agent.model.script",
    "acp_agent.transport.connection",
    "acp_agent.transport.stdio",
    "acp_agent.replay.record",
    "acp_agent.replay.runner",
]


def report_env(agent_env: dict[str, str], report: Path) -> dict[str, str]:
    return {**agent_env, "ACP_AGENT_REPORT_MODULES": str(report)}


async def test_initialize_is_answered_before_the_heavy_modules_are_imported(
    agent_env: dict[str, str], tmp_path: Path, workspace: Path
) -> None:
    report = tmp_path / "modules.txt"
    script = tmp_path / "script.jsonl"
    script.write_text("", encoding="utf-8")
    command = agent_command("--model", f"script:{script}")
    async with RawAgent(command, env=report_env(agent_env, report)) as agent:
        answer = await agent.request("initialize", {"protocolVersion": 1})
        assert answer["result"]["protocolVersion"] == 1
        # written just before the answer: it is there once the answer is
        stage, *names = report.read_text(encoding="utf-8").splitlines()
        assert stage == "# initialize_answered"
        imported = set(names)
        assert "acp_agent.acp.handshake" in imported  # the report is the early path's
        assert sorted(set(NOT_BEFORE_INITIALIZE) & imported) == []
        # and the rest of the server comes after: a session works
        created = await agent.request("session/new", {"cwd": str(workspace), "mcpServers": []})
        assert created["result"]["sessionId"]


NOT_BEFORE_FIRST_SESSION = [
    # a process without a [hooks] table: the command hooks and the config reader
    # (hooks/bridge.py, hooks/__init__.py)
    "acp_agent.hooks.command",
    "acp_agent.hooks.protocol",
    "acp_agent.hooks.config",
    # the fork and the journal invariant's checker, which only a fork runs (session/opening.py)
    "acp_agent.session.fork",
    "acp_agent.journal.invariant",
    "acp_agent.journal.rules",
    # shutil (with bz2 and lzma): only a delete's sweep needs it (session/shelf.py)
    "shutil",
    # /review's git reader (commands/dispatch.py); ask_user, for a client without elicitation forms
    # (tools/registry.py)
    "acp_agent.commands.review",
    "acp_agent.tools.ask_user",
    # a script model's session: no HTTP stack (model/openai/warm.py warms it up after the
    # answer, and only for an HTTP model), no MCP SDK (connected at the first model request)
    "httpx",
    "httpcore",
    "acp_agent.model.openai.provider",
    "mcp",
    "pydantic",
    # the tool modules: made at the session's first use of its tools (acp/wiring.py,
    # turn/toolrun.py), a prompt's or a replayed tool call's
    "acp_agent.tools.registry",
    "acp_agent.tools.read_file",
    "acp_agent.tools.edit_file",
    "acp_agent.tools.run_command",
    "acp_agent.tools.search",
    "acp_agent.tools.web_fetch",
    # structlog: the events so far are written by logs.Logger itself (logs.py), as structlog
    # would write them; only a traceback needs structlog
    "structlog",
]
"""What a fresh process's first ``session/new`` or ``session/load`` is answered without."""


@pytest.mark.parametrize("method", ["session/new", "session/load"])
async def test_the_first_session_is_answered_before_what_it_does_not_need(
    agent_env: dict[str, str], tmp_path: Path, workspace: Path, method: str
) -> None:
    # acp_agent/startup_report.py: the modules are written when the first session/new or
    # session/load handler returned its answer, before the connection writes it.
    report = tmp_path / "modules.txt"
    script = write_script(tmp_path / "script.jsonl", {"text": "noted"})
    command = agent_command("--model", f"script:{script}")
    params = {"cwd": str(workspace), "mcpServers": []}
    if method == "session/load":  # a session on disk, with a turn, from another process
        async with RawAgent(command, env=agent_env) as first:
            await first.request("initialize", {"protocolVersion": 1})
            session_id = (await first.request("session/new", params))["result"]["sessionId"]
            prompt = [{"type": "text", "text": "hello"}]
            done = await first.request(
                "session/prompt", {"sessionId": session_id, "prompt": prompt}
            )
            assert done["result"]["stopReason"] == "end_turn"
        params = {**params, "sessionId": session_id}
    async with RawAgent(command, env=report_env(agent_env, report)) as agent:
        await agent.request("initialize", {"protocolVersion": 1})
        answer = await agent.request(method, params)
        assert "result" in answer, answer
        stage, *names = report.read_text(encoding="utf-8").splitlines()
        assert stage == f"# {method}_answered"
        imported = set(names)
        assert "acp_agent.session.service" in imported  # the report is the server's
        assert sorted(set(NOT_BEFORE_FIRST_SESSION) & imported) == []


async def test_the_early_answer_is_the_routers_answer(agent_env: dict[str, str]) -> None:
    # The first initialize is answered by launch.py, the second by AgentServer.initialize: one
    # function makes both (acp/handshake.py), so they must be equal.
    async with RawAgent(env={**agent_env, "OPENAI_API_KEY": None}) as agent:
        first = await agent.request("initialize", {"protocolVersion": 1})
        second = await agent.request("initialize", {"protocolVersion": 1})
    assert first["result"] == second["result"]
    assert first["result"]["agentInfo"]["name"] == "acp-agent"


async def test_a_key_missing_is_in_the_early_answers_auth_methods(
    agent_env: dict[str, str],
) -> None:
    # model_option.py: a provider among the choices whose key is unset is listed in authMethods
    env = {**agent_env, "OPENAI_API_KEY": None}
    async with RawAgent(agent_command("--model", "openai:gpt-test"), env=env) as agent:
        answer = await agent.request("initialize", {"protocolVersion": 1})
    assert [m["id"] for m in answer["result"]["authMethods"]] == ["openai-api-key"]


async def test_lines_sent_with_the_first_reach_the_connection(
    agent_env: dict[str, str], workspace: Path
) -> None:
    # initialize and session/new in one write: the early read takes both; the second must be
    # served by the connection, answered after the first.
    async with RawAgent(env=agent_env) as agent:
        await agent.send(line(initialize(1)) + line(new_session(2, workspace, "both")))
        answers = [await agent.recv(), await agent.recv()]
    assert [a["id"] for a in answers] == [1, 2]
    assert answers[1]["result"]["sessionId"] == "both"


@pytest.mark.parametrize(
    ("first", "expected"),
    [
        # another method first: the router answers it (session/list needs no initialize)
        (line(request(7, "session/list", {})), {"id": 7, "result": True}),
        # bad params: the router's -32602, naming the path
        (line(request(8, "initialize", {"protocolVersion": []})), {"id": 8, "code": -32602}),
        # not JSON: -32700 (JSON-RPC 2.0 §5.1), id null
        (b"{nope\n", {"id": None, "code": -32700}),
        # a BOM before the first line is dropped (RFC 8259 §8.1, framing.py): answered
        (b"\xef\xbb\xbf" + line(initialize(9)), {"id": 9, "result": True}),
    ],
    ids=["other-method", "bad-params", "not-json", "bom"],
)
async def test_a_first_line_the_early_path_leaves_is_answered_as_ever(
    agent_env: dict[str, str], first: bytes, expected: dict[str, object]
) -> None:
    async with RawAgent(env=agent_env) as agent:
        await agent.send(first)
        answer = await agent.recv()
        assert answer["id"] == expected["id"]
        if "code" in expected:
            assert answer["error"]["code"] == expected["code"]
        else:
            assert "result" in answer
        # the connection goes on serving
        after = await agent.request("initialize", {"protocolVersion": 1})
        assert after["result"]["protocolVersion"] == 1


async def test_a_bom_on_the_second_line_is_still_an_error(agent_env: dict[str, str]) -> None:
    # framing.py: only the input's first line may drop a BOM. The early path answered the
    # first line, so the connection must not take the second for the input's first.
    async with RawAgent(env=agent_env, validate=False) as agent:
        await agent.send(line(initialize(1)) + b"\xef\xbb\xbf" + line(request(2, "initialize", {})))
        assert (await agent.recv())["id"] == 1
        second = await agent.recv()
    assert second["error"]["code"] == -32700


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_before_any_input_exits_0(
    agent_env: dict[str, str], tmp_path: Path, signum: int
) -> None:
    # docs/contract.md §1: a signal ends the process with 0, also while it waits for its first
    # line (launch.py reads it before the event loop runs); without a handler there it would
    # end by the signal (-signum) or with a KeyboardInterrupt traceback (1). The agent reports
    # its modules just before it waits, with its handlers installed.
    report = tmp_path / "modules.txt"
    process = await asyncio.create_subprocess_exec(
        *agent_command(),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(report_env(agent_env, report)),
    )
    assert process.stdout is not None and process.stderr is not None
    await asyncio.to_thread(_reported, report, "# awaiting_first_line", 30)
    process.send_signal(signum)
    code = await asyncio.wait_for(process.wait(), 10)
    assert (code, await process.stdout.read()) == (0, b"")
    events = [json.loads(raw)["event"] for raw in (await process.stderr.read()).splitlines()]
    assert events == ["input_ended"]


def _reported(report: Path, stage: str, within: float) -> None:
    deadline = time.monotonic() + within
    while not (report.exists() and report.read_text(encoding="utf-8").startswith(stage + "\n")):
        assert time.monotonic() < deadline, f"the agent never reported {stage!r}"
        time.sleep(0.01)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_right_after_the_early_answer_exits_0(
    agent_env: dict[str, str], signum: int
) -> None:
    # Sent as soon as initialize is answered: most likely while the rest of the server is
    # still being imported, before the event loop's receiver exists. It is kept and handled.
    async with RawAgent(env=agent_env) as agent:
        answer = await agent.request("initialize", {"protocolVersion": 1})
        assert "result" in answer
        agent.process.send_signal(signum)
        code = await asyncio.wait_for(agent.process.wait(), 10)
    assert code == 0


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
async def test_a_signal_while_the_config_is_read_exits_0(
    agent_env: dict[str, str], tmp_path: Path, signum: int
) -> None:
    # The config file is a FIFO, so the agent is held in its config check (launch.py reads the
    # file before any input) until the test closes its end: the signal comes while it is read. The
    # latch keeps it (once, the process died of it) and the process ends as it would waiting
    # for input: exit 0, nothing on stdout, only input_ended logged.
    config = tmp_path / "config.fifo"
    os.mkfifo(config)
    process = await asyncio.create_subprocess_exec(
        *agent_command("--config", str(config)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(agent_env),
    )
    assert process.stdout is not None and process.stderr is not None
    writer = await asyncio.to_thread(os.open, config, os.O_WRONLY)  # the agent opened it too
    process.send_signal(signum)  # while it reads: it cannot have read to the end yet
    os.close(writer)
    code = await asyncio.wait_for(process.wait(), 10)
    assert (code, await process.stdout.read()) == (0, b"")
    events = [json.loads(raw)["event"] for raw in (await process.stderr.read()).splitlines()]
    assert events == ["input_ended"]


async def test_a_bad_config_exits_2_before_reading_input(
    agent_env: dict[str, str], tmp_path: Path
) -> None:
    # No input is ever sent: the check must not wait for it.
    config = tmp_path / "config.toml"
    config.write_text("[hooks]\nprompt_submit = 3\n", encoding="utf-8")
    process = await asyncio.create_subprocess_exec(
        *agent_command("--config", str(config)),
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=child_env(agent_env),
    )
    out, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert out == b""
    assert str(config) in err.decode()
