"""``/permissions`` through the Python API door (``acp_agent.api``): the same command, run by
``commands/dispatch.py``; the project rules the API's sessions see are the state dir's."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.api import Agent, ScriptModel, Session
from acp_agent.commands.dispatch import CommandRefused
from acp_agent.permissions.patterns import parse_pattern
from acp_agent.permissions.rules import Effect, Rule, Source
from acp_agent.permissions.store import ProjectStore
from acp_agent.turn.vocabulary import Finished, StopReason


async def answer(session: Session, text: str) -> str:
    pending = await session.send(text)
    assert await pending.outcome() == Finished(StopReason.END_TURN)
    assert pending.answer is not None
    return pending.answer.text


async def test_permissions_lists_and_removes_through_the_api(
    tmp_path: Path, workspace: Path
) -> None:
    state = tmp_path / "state"
    ProjectStore(state, str(workspace)).add(
        Rule(Effect.ALLOW, parse_pattern("run_command(make *)"), Source.PROJECT)
    )
    script = tmp_path / "script.jsonl"
    script.write_text('{"text": "done"}\n', encoding="utf-8")
    async with Agent.open(state, ScriptModel(script)) as agent:
        session = await agent.new_session(workspace, "api-permissions")
        session.rules.add(Rule(Effect.ALLOW, parse_pattern("edit(**)"), Source.SESSION))
        listed = await answer(session, "/permissions")
        assert listed.splitlines()[1:] == [
            "1. allow run_command(make *) [project]",
            "2. allow edit(**) [session]",
        ]
        removed = await answer(session, "/permissions remove 1")
        assert removed.startswith("Removed rule 1: allow run_command(make *) [project].")
        assert [r.pattern.text for r in session.rules.listed()] == ["edit(**)"]
        with pytest.raises(CommandRefused, match="usage: /permissions"):
            await session.send("/permissions delete 1")
    assert ProjectStore(state, str(workspace)).rules() == ()
