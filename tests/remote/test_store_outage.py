"""A database outage under a live agent (``--journal-store postgresql://…``, docs/contract.md
§13): the turn's barriers fail with a clear error naming the unreachable store, nothing that was
acknowledged is lost, and once the database is back the admitted events are committed and the
session prompts on."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from bench.postgres_server import PostgresServer
from tests.integration.support import write_script
from tests.remote.support import peer, prompt_params, start, stop
from tests.support.acp_schema import AcpSchema
from tests.support.process import agent_command

pytestmark = pytest.mark.subprocess


async def test_an_outage_fails_the_barriers_clearly_and_loses_nothing(
    tmp_path: Path, workspace: Path, private_postgres: PostgresServer, acp_schema: AcpSchema
) -> None:
    url = private_postgres.new_database()
    script = write_script(tmp_path / "s.jsonl", {"text": "one"}, {"text": "two"}, {"text": "three"})
    env = {"ACP_AGENT_JOURNAL_LEASE_SECONDS": "600"}  # the outage, not the lease, is under test
    agent = start(script, tmp_path / "state", "--journal-store", url, env=env)
    try:
        async with peer(agent.ws_url) as client:
            await client.initialize()
            session_id = await client.new_session(workspace)
            answer = await client.call("session/prompt", prompt_params(session_id, "p1"))
            assert answer["result"] == {"stopReason": "end_turn"}
            private_postgres.halt()
            await client.call("session/prompt", prompt_params(session_id, "p2"))
            errors = [
                f["params"]
                for f in client.transcript.agent_frames
                if f.get("method") == "_acp_agent/journal_error"
            ]
            assert errors and all(e["sessionId"] == session_id for e in errors)
            assert "journal store" in errors[0]["error"] and "unreachable" in errors[0]["error"]
            assert errors[-1]["unflushed"] > 0
            private_postgres.resume()
            idle = await client.call("_acp_agent/when_idle", {"sessionId": session_id})
            assert idle["result"]["journal"] == {"healthy": True, "unflushed": 0, "lastError": None}
            answer = await client.call("session/prompt", prompt_params(session_id, "p3"))
            assert answer["result"] == {"stopReason": "end_turn"}
            client.validate(acp_schema)
    finally:
        assert stop(agent) == 0, agent.log_text()
    assert "journal_flush_failed" in agent.log_text()
    queried = journal(tmp_path, url, "query", session_id, "--type", "user/message", "--json")
    assert queried.returncode == 0, queried.stderr
    assert queried.stdout.count("\n") == 3  # p1, p2 (admitted during the outage), p3
    checked = journal(tmp_path, url, "check", session_id)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def journal(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    argv = agent_command("journal", *args, "--state-dir", str(tmp_path / "cli"))
    return subprocess.run(
        [*argv, "--journal-store", url], capture_output=True, text=True, timeout=60, check=False
    )
