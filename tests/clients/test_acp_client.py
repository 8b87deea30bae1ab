"""acp-client (PyPI ``acp-client``, pinned in the ``test`` extra) drives a real session: a tool
batch whose write asks permission, answered by the library's permission handler.

acp-client offers the agent no file system and no terminal, so the agent reads and writes the
workspace itself; it answers ``session/request_permission`` with the handler's ``optionId``, or
``cancelled`` when the handler returns ``None``.
"""

from __future__ import annotations

from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest
from acp_client import Agent

from tests.clients.support import READ_THEN_WRITE
from tests.integration.support import check_journal, write_script
from tests.support.process import agent_command

pytestmark = [pytest.mark.subprocess, pytest.mark.timeout(60)]


class Permissions:
    """A permission handler that answers ``choice`` and keeps every request."""

    def __init__(self, choice: str | None) -> None:
        self.choice = choice
        self.asked: list[dict[str, Any]] = []

    async def __call__(self, request: dict[str, Any]) -> str | None:
        self.asked.append(request)
        return self.choice


async def ask(
    tmp_path: Path, workspace: Path, state_dir: Path, choice: str | None
) -> tuple[Agent, str, list[dict[str, Any]], Permissions]:
    (workspace / "notes.txt").write_text("hello from disk\n")
    script = write_script(tmp_path / "script.jsonl", *READ_THEN_WRITE)
    command = agent_command("--model", f"script:{script}", "--state-dir", str(state_dir))
    permissions = Permissions(choice)
    agent = Agent(command, workspace, permission=permissions)
    updates: list[dict[str, Any]] = []
    try:
        answer = await agent.ask("read notes", on_update=updates.append)
    finally:
        session = agent.session
        await agent.stop()
    assert session is not None
    check_journal(state_dir, session, workspace)
    return agent, answer, updates, permissions


def finished(updates: list[dict[str, Any]]) -> dict[str, str]:
    return {
        u["toolCallId"]: u["status"] for u in updates if u.get("status") in ("completed", "failed")
    }


async def test_a_tool_batch_with_a_permission_answered_allow(
    tmp_path: Path, workspace: Path, state_dir: Path
) -> None:
    assert version("acp-client") == "0.1.0"
    _, answer, updates, permissions = await ask(tmp_path, workspace, state_dir, "allow_once")
    assert answer == "The file says: hello from disk"
    (asked,) = permissions.asked
    assert asked["toolCall"]["toolCallId"] == "w1"
    assert "allow_once" in [o["optionId"] for o in asked["options"]]
    assert (workspace / "out.txt").read_text() == "x"
    calls = [u["toolCallId"] for u in updates if u["sessionUpdate"] == "tool_call"]
    assert calls == ["r1", "w1"]
    assert finished(updates) == {"r1": "completed", "w1": "completed"}


async def test_a_permission_turned_down_leaves_the_file_unwritten(
    tmp_path: Path, workspace: Path, state_dir: Path
) -> None:
    """The handler returns None: acp-client answers ``cancelled``, and the write does not run."""
    _, answer, updates, permissions = await ask(tmp_path, workspace, state_dir, None)
    assert len(permissions.asked) == 1
    assert not (workspace / "out.txt").exists()
    assert finished(updates) == {"r1": "completed", "w1": "failed"}
    assert answer == "The file says: hello from disk"
