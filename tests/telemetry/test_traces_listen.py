"""Traces from ``serve --listen`` (docs/contract.md §10, §14): the same spans, flushed at its end.

The batch delay is a minute, so the spans can only reach the loopback receiver by the flush of
the process's ending (``process.life.finish``), after the SIGTERM ``listening`` sends.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.support import write_script
from tests.remote.support import listening, peer, prompt_params
from tests.telemetry.receiver import receiving

pytestmark = pytest.mark.subprocess
pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
pytest.importorskip("websockets", reason="the remote extra is not installed")


async def test_a_listening_server_exports_its_turns_at_its_end(
    tmp_path: Path, workspace: Path, state_dir: Path
) -> None:
    script = write_script(tmp_path / "script.jsonl", {"text": "over the network"})
    with receiving() as receiver:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url, "OTEL_BSP_SCHEDULE_DELAY": "60000"}
        with listening(script, state_dir, env=env) as listener:
            async with peer(listener.ws_url) as client:
                await client.initialize()
                session_id = await client.new_session(workspace)
                answer = await client.call("session/prompt", prompt_params(session_id, "hi"))
                assert answer["result"]["stopReason"] == "end_turn"
            assert receiver.spans == []
    [turn] = receiver.named("turn")
    assert turn.attributes["session.id"] == session_id
    [request_span] = receiver.named("model.request")
    assert request_span.parent_span_id == turn.span_id
