"""The coding tools through the Python API: a permissions factory decides, and workspace
instructions are injected on request."""

from __future__ import annotations

from pathlib import Path

from acp_agent.api import Agent
from acp_agent.journal.events import SessionHeader, ToolResult, UserMessage
from acp_agent.model.script import ScriptModel
from acp_agent.tools.permissions import Mode, Permissions
from acp_agent.tools.registry import coding_tools
from acp_agent.turn.vocabulary import Finished
from tests.session.support import lines

WRITE = (
    '{"toolCalls": [{"id": "c1", "name": "write_file", '
    '"arguments": {"path": "out.txt", "content": "hi"}}]}'
)


async def run_write(tmp_path: Path, workspace: Path, mode: Mode | None) -> list[ToolResult]:
    model = ScriptModel.from_lines(lines(WRITE, '{"text": "done"}'))

    def permissions(header: SessionHeader) -> Permissions:
        assert mode is not None
        return Permissions(mode, session_id=header.id)

    factory = permissions if mode is not None else None
    state = tmp_path / f"state-{mode}"
    async with Agent.open(
        state, model, tools=lambda _: coding_tools(), permissions=factory
    ) as agent:
        session = await agent.new_session(workspace)
        outcome = await (await session.send("write it")).outcome()
        assert isinstance(outcome, Finished)
        return [e.event for e in session.entries if isinstance(e.event, ToolResult)]


async def test_a_full_access_session_writes(tmp_path: Path, workspace: Path) -> None:
    (result,) = await run_write(tmp_path, workspace, Mode.FULL_ACCESS)
    assert not result.is_error
    assert (workspace / "out.txt").read_text(encoding="utf-8") == "hi"


async def test_by_default_nobody_can_allow_a_write(tmp_path: Path, workspace: Path) -> None:
    (result,) = await run_write(tmp_path, workspace, None)
    assert result.is_error and not (workspace / "out.txt").exists()


async def test_workspace_instructions_through_inject(tmp_path: Path, workspace: Path) -> None:
    (workspace / "CLAUDE.md").write_text("Be brief.", encoding="utf-8")
    model = ScriptModel.from_lines(lines('{"text": "ok"}'))
    async with Agent.open(tmp_path / "state", model) as agent:
        session = await agent.new_session(workspace)
        (injected,) = await session.inject_workspace_instructions()
        await session.when_idle()
        (entry,) = session.entries
    assert isinstance(entry.event, UserMessage) and entry.event.id == injected.message_id
    assert entry.event.source == {
        "kind": "plugin",
        "name": "workspace-instructions",
        "path": str(workspace / "CLAUDE.md"),
    }
