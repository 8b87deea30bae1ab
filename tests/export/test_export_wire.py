"""``/export`` through both doors: over ACP (the real agent over stdio) and the Python API.

It is answered by the agent itself (an agent message marked ``_meta.acp_agent.command``, no
model request, nothing journaled) and names the file it wrote under ``<state-dir>/exports/``.
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from acp_agent.api import Agent
from acp_agent.commands.dispatch import CommandRefused
from acp_agent.model.registry import ModelCatalog
from acp_agent.turn.vocabulary import Finished, StopReason
from tests.integration.support import check_journal, serve_command, write_script
from tests.integration.test_commands_wire import INIT, new_params, prompt_params, updates_of
from tests.support.recording import RawAgent
from tests.support.requests import read_requests

pytestmark = pytest.mark.subprocess

ANSWER = re.compile(r"Exported (\d+) events of session (\S+) to (/\S+)")


def written(text: str, state_dir: Path, suffix: str) -> Path:
    match = ANSWER.fullmatch(text)
    assert match is not None, text
    path = Path(match.group(3))
    assert path.parent == state_dir / "exports" and path.suffix == suffix
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return path


async def test_export_over_acp(
    tmp_path: Path, workspace: Path, state_dir: Path, agent_env: dict[str, str]
) -> None:
    log = tmp_path / "requests.jsonl"
    script = write_script(tmp_path / "s.jsonl", {"text": "hello <b>there</b>"})
    env = {**agent_env, "ACP_AGENT_SCRIPT_REQUESTS": str(log)}
    async with RawAgent(serve_command(script), env=env) as agent:
        await agent.request("initialize", INIT)
        await agent.request("session/new", new_params(workspace))
        await agent.request("session/prompt", prompt_params("hi"))
        before = check_journal(state_dir, "s", workspace).events
        html = await agent.request("session/prompt", prompt_params("/export"))
        markdown = await agent.request("session/prompt", prompt_params("/export md"))
        refused = await agent.request("session/prompt", prompt_params("/export pdf"))
        after = check_journal(state_dir, "s", workspace).events
    assert html["result"] == markdown["result"] == {"stopReason": "end_turn"}
    assert refused["error"]["code"] == -32602
    assert "/export takes html or md, not 'pdf'" in refused["error"]["message"]
    assert len(read_requests(log)) == 1 and after == before
    answers = [
        u["content"]["text"]
        for u in updates_of(agent.transcript.agent_frames, "agent_message_chunk")
        if u.get("_meta", {}).get("acp_agent", {}).get("command") == "export"
    ]
    assert len(answers) == 2
    page = written(answers[0], state_dir, ".html").read_text("utf-8")
    assert '<article class="turn" id="turn-1">' in page and "hello &lt;b&gt;there&lt;/b&gt;" in page
    assert "<title>hi · acp-agent</title>" in page  # the first prompt's title
    assert "## Turn 1" in written(answers[1], state_dir, ".md").read_text("utf-8")


async def test_export_through_the_api(tmp_path: Path, workspace: Path) -> None:
    models = ModelCatalog(f"script:{write_script(tmp_path / 's.jsonl', {'text': 'done'})}", {})
    state = tmp_path / "state"
    async with Agent.open(state, models) as agent:
        session = await agent.new_session(workspace)
        assert await (await session.send("hello")).outcome() == Finished(StopReason.END_TURN)
        exported = await session.send("/export")
        assert await exported.outcome() == Finished(StopReason.END_TURN)
        assert exported.answer is not None and exported.answer.command == "export"
        path = written(exported.answer.text, state, ".html")
        assert f"session {session.id}" in exported.answer.text
        assert "done" in path.read_text("utf-8")
        with pytest.raises(CommandRefused, match="/export takes html or md"):
            await session.send("/export everything")
