"""A parent session built through the real Python API, shared by the fork and CLI tests.

``build_parent`` runs two turns with idle injections between and after them. Its journal::

    1 turn/start          7 user/message [client]   (between turns: a fork boundary)
    2 user/message [user] 8 turn/start ...           (turn 2: a read_file tool call)
    3..5 one step         18 turn/end
    6 turn/end            19 user/message [hook]    (the out-of-turn tail)
"""

from __future__ import annotations

from pathlib import Path

from acp_agent.api import Agent, Session
from acp_agent.journal.events import Entry, source
from acp_agent.journal.reader import load_journal
from acp_agent.model.script import ScriptModel
from tests.session.support import lines

PARENT = "parent"
INJECTED_SEQ = 7
LAST_SEQ = 19

PARENT_SCRIPT = (
    '{"text": "Hello! How can I help?"}',
    '{"thought": "look", "text": "reading", "toolCalls": '
    '[{"id": "c1", "name": "read_file", "arguments": {"path": "a.txt"}}]}',
    '{"text": "a.txt says hi"}',
)


def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "workspace"
    path.mkdir(exist_ok=True)
    (path / "a.txt").write_text("hi from a.txt", encoding="utf-8")
    return path.resolve()


async def run_parent(agent: Agent, cwd: Path) -> Session:
    parent = await agent.new_session(cwd, PARENT)
    await (await parent.send("Hi there")).outcome()
    await parent.inject("The user prefers tabs.", source("client"))
    await (await parent.send("read a.txt please")).outcome()
    await parent.inject("late context", source("hook", hook="prompt_submit"))
    await parent.when_idle()
    return parent


async def build_parent(tmp_path: Path) -> Path:
    """Build the parent session under ``tmp_path / "state"``; return the state dir."""
    state = tmp_path / "state"
    model = ScriptModel.from_lines(lines(*PARENT_SCRIPT), tmp_path / "parent-requests.jsonl")
    async with Agent.open(state, model) as agent:
        await run_parent(agent, workspace(tmp_path))
    return state


def journal_entries(state: Path, session_id: str) -> list[Entry]:
    return load_journal(state / "sessions" / session_id / "journal.jsonl").entries
