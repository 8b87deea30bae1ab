"""Traces off unless configured: nothing of ``opentelemetry`` imported, one warning without it.

Each test runs the real agent (``python -X importtime``: every module the process imports is
named on stderr) through a turn with a tool call, which is where spans would be started.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from acp_agent import telemetry
from tests.integration.long_work import call, start
from tests.integration.support import prompt, write_script
from tests.support.process import child_env
from tests.support.recording import RawAgent
from tests.telemetry.test_traces_wire import NO_OTEL, closed_port

pytestmark = pytest.mark.subprocess


def imported(stderr: bytes) -> set[str]:
    """The modules ``-X importtime`` reported (``import time: self | cumulative | name``)."""
    names = set()
    for text in stderr.decode(errors="replace").splitlines():
        if text.startswith("import time:") and text.count("|") == 2:
            names.add(text.rsplit("|", 1)[1].strip())
    return names


def without_opentelemetry(tmp_path: Path) -> Path:
    """A directory to put first on ``PYTHONPATH``: its ``opentelemetry`` cannot be imported, as
    if the extra were not installed (the real one is a namespace package, which it hides)."""
    hidden = tmp_path / "hidden"
    (hidden / "opentelemetry").mkdir(parents=True)
    (hidden / "opentelemetry" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'opentelemetry'\", name='opentelemetry')\n"
    )
    return hidden


async def turn_with_a_tool(
    tmp_path: Path, workspace: Path, env: dict[str, str | None], *, pythonpath: str = ""
) -> tuple[set[str], list[dict[str, object]]]:
    """The modules a process imported through one turn with a tool call, and its log."""
    script = write_script(
        tmp_path / "script.jsonl", {"toolCalls": [call("c1", "list_dir", path=".")]}, {}
    )
    log = tmp_path / "agent.log"
    command = [sys.executable, "-X", "importtime", "-m", "acp_agent"]
    command += ["--model", f"script:{script}", "--log-level", "info", "--log-file", str(log)]
    if pythonpath:
        env = {**env, "PYTHONPATH": pythonpath}
    async with RawAgent(command, env=env) as agent:
        peer = await start(agent, workspace, "s")
        await agent.send(prompt(3, "s", "look"))
        assert (await peer.until_answered(3, 20))["result"]["stopReason"] == "end_turn"
        await agent.close_stdin()
        await peer.to_the_end(10)
    events = [json.loads(text) for text in log.read_text().splitlines()]
    return imported(agent.stderr), events


@pytest.mark.parametrize("configured", [False, True], ids=["no-endpoint", "endpoint"])
async def test_opentelemetry_is_imported_only_with_an_endpoint(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str], configured: bool
) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    endpoint = f"http://127.0.0.1:{closed_port()}" if configured else None
    env = {**agent_env, **NO_OTEL, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    modules, _ = await turn_with_a_tool(tmp_path, workspace, env)
    assert "acp_agent.turn.actor" in modules  # the report is the whole run's
    assert "acp_agent.telemetry" in modules
    assert ("opentelemetry" in modules) is configured
    assert ("acp_agent.telemetry.otel" in modules) is configured


async def test_an_endpoint_without_the_extra_is_one_warning_and_the_agent_runs(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    hidden = without_opentelemetry(tmp_path)
    env = {**agent_env, **NO_OTEL, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    _, events = await turn_with_a_tool(tmp_path, workspace, env, pythonpath=str(hidden))
    warnings = [e for e in events if e["event"] == "traces_unavailable"]
    assert len(warnings) == 1
    assert warnings[0]["level"] == "warning"
    assert warnings[0]["hint"] == telemetry.EXTRA_HINT
    assert "opentelemetry is missing" in str(warnings[0]["reason"])
    assert not [e for e in events if e["event"] == "traces_enabled"]


@pytest.mark.parametrize(
    ("environ", "wanted"),
    [
        ({}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, True),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, True),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "  "}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}, False),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "false"}, True),
    ],
)
def test_which_variables_turn_traces_on(environ: dict[str, str], wanted: bool) -> None:
    assert telemetry.wanted(environ) is wanted


async def test_an_sdk_that_cannot_be_set_up_is_one_warning_and_the_agent_runs(
    tmp_path: Path, workspace: Path, agent_env: dict[str, str]
) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
    env = {
        **agent_env,
        **NO_OTEL,
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9",
        "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER": "no-such-provider",
    }
    _, events = await turn_with_a_tool(tmp_path, workspace, env)
    [warning] = [e for e in events if e["event"] == "traces_unavailable"]
    assert "could not be set up" in str(warning["reason"])
    assert "no-such-provider" in str(warning["reason"])
    assert not [e for e in events if e["event"] == "traces_enabled"]


HOST_OF_TWO = """
import sys
import anyio
from pathlib import Path
from acp_agent import logs
from acp_agent.api import Agent
from acp_agent.model.script import ScriptLine, ScriptModel

async def main() -> None:
    logs.configure("info", sys.argv[2])
    for _ in range(2):
        async with Agent.open(Path(sys.argv[1]), ScriptModel.from_lines([])):
            pass

anyio.run(main)
"""


def test_a_host_opening_agents_is_warned_once(tmp_path: Path, state_dir: Path) -> None:
    hidden = without_opentelemetry(tmp_path)
    log = tmp_path / "host.log"
    env = {**NO_OTEL, "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"}
    env["PYTHONPATH"] = str(hidden)
    done = subprocess.run(
        [sys.executable, "-c", HOST_OF_TWO, str(state_dir), str(log)],
        env=child_env(env),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    events = [json.loads(text)["event"] for text in log.read_text().splitlines()]
    assert events.count("traces_unavailable") == 1
