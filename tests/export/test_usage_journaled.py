"""A request's usage reaches the journal (``assistant/message.usage``) and the export shows it.

The real agent over stdio with the script model, whose lines may carry ``usage`` as a provider
reports it; then ``acp-agent journal export`` of that session (in-process).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.integration.support import check_journal, serve_command, write_script
from tests.support.process import agent_command
from tests.support.recording import recorded_agent

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(60)]


def export(*argv: str) -> int:
    """``acp-agent journal export ...`` as a user runs it: a process of its own (run in this
    one, it would configure this process's logging and blind every later ``capture_logs``)."""
    done = subprocess.run([*agent_command("journal", "export"), *argv], check=False, timeout=60)
    return done.returncode


async def test_usage_is_journaled_and_exported(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    script = write_script(
        tmp_path / "script.jsonl",
        {
            "toolCalls": [{"id": "r1", "name": "read_file", "arguments": {"path": "a.txt"}}],
            "usage": {"inputTokens": 900, "outputTokens": 25, "reasoningTokens": 7, "cost": 0.002},
        },
        {"text": "alpha it is", "usage": {"inputTokens": 950, "outputTokens": 5}},
        {"text": "no usage reported here"},
    )
    async with recorded_agent(command=serve_command(script), env=agent_env) as agent:
        sid = await agent.handshake(workspace)
        assert (await agent.prompt_text(sid, "read a.txt")).stop_reason == "end_turn"
        assert (await agent.prompt_text(sid, "again")).stop_reason == "end_turn"

    journal = check_journal(state_dir, sid, workspace)
    assert [m.get("usage") for m in journal.of_type("assistant/message")] == [
        {"inputTokens": 900, "outputTokens": 25, "reasoningTokens": 7, "cost": 0.002},
        {"inputTokens": 950, "outputTokens": 5},
        None,
    ]
    page = tmp_path / "t.html"
    assert export(sid, "--state-dir", str(state_dir), "-o", str(page)) == 0
    exported = page.read_text("utf-8")
    assert "1,850 in, 30 out tokens (7 reasoning) · $0.0020" in exported
    assert exported.count(" out tokens") == 2  # turn 1: its header, its timeline row
