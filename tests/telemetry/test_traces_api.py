"""Traces through the Python API's door (``acp_agent.api.Agent``): the same spans as over ACP.

A fresh interpreter runs the API with the variables set (the tracer is process-wide, so not in
the test's own process) and the batch delay at a minute; it says ``host: closed`` once ``Agent.open``
has ended and then waits, so the spans the receiver holds by then were flushed by the close.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import IO

import pytest

from tests.support.process import child_env
from tests.telemetry.receiver import receiving
from tests.telemetry.test_traces_wire import NO_OTEL

pytestmark = pytest.mark.subprocess
pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")

HOST = """
import sys
import anyio
from pathlib import Path
from typing import IO
from acp_agent.api import Agent, source
from acp_agent.model.script import ScriptLine, ScriptModel

async def main() -> None:
    model = ScriptModel.from_lines([ScriptLine(text="hello")])
    async with Agent.open(Path(sys.argv[1]), model) as agent:
        session = await agent.new_session(cwd=sys.argv[2])
        await session.inject("tabs, please", source("plugin", name="prefs"))
        pending = await session.send("hi")
        print("host:", type(await pending.outcome()).__name__, session.id, flush=True)
    print("host: closed", flush=True)
    sys.stdin.readline()

anyio.run(main)
"""


def said(out: IO[str]) -> str:
    """The host's next line of its own (structlog, unconfigured in a host, prints there too)."""
    while not (text := out.readline()).startswith("host:"):
        assert text, "the host ended early"
    return text.rstrip("\n")


def test_the_api_door_exports_the_turn_and_flushes_when_the_agent_closes(
    tmp_path: Path, workspace: Path, state_dir: Path
) -> None:
    with receiving() as receiver:
        env = {
            **NO_OTEL,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
            "OTEL_BSP_SCHEDULE_DELAY": "60000",
        }
        host = subprocess.Popen(
            [sys.executable, "-c", HOST, str(state_dir), str(workspace)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=child_env(env),
            text=True,
        )
        try:
            assert host.stdout is not None and host.stdin is not None
            _, outcome, session_id = said(host.stdout).split()
            assert said(host.stdout) == "host: closed"
            names = sorted(s.name for s in receiver.spans)  # no waiting: the close flushed
            _, stderr = host.communicate("\n", timeout=30)
        finally:
            if host.poll() is None:
                host.kill()
                host.communicate()
    assert host.returncode == 0, stderr
    assert outcome == "Finished"
    assert names == ["injection", "model.request", "turn"]
    [turn] = receiver.named("turn")
    [request_span] = receiver.named("model.request")
    assert turn.attributes["session.id"] == session_id
    assert request_span.parent_span_id == turn.span_id
    [injection] = receiver.named("injection")  # appended before the turn: a span of its own
    assert injection.attributes == {
        "session.id": session_id,
        "source.kind": "plugin",
        "source.name": "prefs",
    }
