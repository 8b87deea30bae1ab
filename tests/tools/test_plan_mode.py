"""Plan mode locally: what it refuses, the ``exit_plan_mode`` question and its answers, and
the tool being offered only in plan mode.

Expectations: docs/contract.md §9 ("Plan mode") and docs/tools.md (plan mode)."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.tools.base import ToolError
from acp_agent.tools.permissions import AskFailed, Mode, OptionKind, PermissionRequest
from acp_agent.tools.plan_mode import ExitPlanMode
from acp_agent.tools.registry import coding_tools
from acp_agent.tools.run_command import RunCommand
from acp_agent.tools.todo import TodoWrite
from acp_agent.tools.web_fetch import WebFetch
from acp_agent.tools.write_file import WriteFile
from acp_agent.turn.toolrun import ToolRunner
from tests.tools.support import ScriptedAsker, context


async def test_plan_mode_refuses_edits_commands_and_fetches_and_allows_the_plan(
    workspace: Path,
) -> None:
    ctx = context(workspace, Mode.PLAN, ScriptedAsker())
    with pytest.raises(ToolError, match=r"plan mode: file edits are not allowed.*exit_plan_mode"):
        await WriteFile().run({"path": "a.txt", "content": "x"}, ctx)
    with pytest.raises(ToolError, match="plan mode: `touch` commands are not allowed"):
        await RunCommand().run({"command": "touch ran"}, ctx)
    with pytest.raises(ToolError, match=r"plan mode: fetches from example\.com are not allowed"):
        await WebFetch().run({"url": "http://example.com/"}, ctx)
    todos = [{"content": "read the code", "status": "in_progress"}]
    assert not (await TodoWrite().run({"todos": todos}, ctx)).is_error
    assert not (workspace / "a.txt").exists() and not (workspace / "ran").exists()


def test_exit_plan_mode_is_offered_only_in_plan_mode(workspace: Path) -> None:
    runner = ToolRunner(coding_tools(), context(workspace, Mode.ASK))
    assert "exit_plan_mode" not in [s.name for s in runner.specs()]
    runner.permissions.mode = Mode.PLAN
    names = [s.name for s in runner.specs()]
    assert "exit_plan_mode" in names and {"multi_edit", "glob", "web_fetch"} <= set(names)


@pytest.mark.parametrize(("answer", "mode"), [("auto-edit", Mode.AUTO_EDIT), ("ask", Mode.ASK)])
async def test_an_approved_plan_switches_the_mode(workspace: Path, answer: str, mode: Mode) -> None:
    asker = ScriptedAsker([answer])
    ctx = context(workspace, Mode.PLAN, asker)
    switched: list[Mode] = []

    async def on_switch(to: Mode) -> None:
        switched.append(to)
        ctx.permissions.mode = to

    ctx.permissions.on_switch = on_switch
    output = await ExitPlanMode().run({"plan": "1. edit\n2. test"}, ctx)
    assert not output.is_error and f"now in {mode} mode" in output.content[0].text  # type: ignore[union-attr]
    assert switched == [mode] and ctx.permissions.mode is mode
    (request,) = asker.asked
    assert request.message == "1. edit\n2. test"
    assert [(o.option_id, o.kind) for o in request.options] == [
        ("auto-edit", OptionKind.ALLOW_ALWAYS),
        ("ask", OptionKind.ALLOW_ONCE),
        ("keep-planning", OptionKind.REJECT_ONCE),
    ]


class FailingAsker:
    async def ask(self, request: PermissionRequest) -> str | None:
        raise AskFailed("the wire is gone")


@pytest.mark.parametrize(
    ("asker", "message"),
    [
        (ScriptedAsker(["keep-planning"]), "The user chose to keep planning"),
        (ScriptedAsker([None]), "cancelled"),
        (ScriptedAsker(["yolo"]), "an option not offered"),
        (FailingAsker(), "the question failed: the wire is gone"),
        (None, "no client to ask"),
    ],
)
async def test_anything_but_an_approval_keeps_plan_mode(
    workspace: Path, asker: ScriptedAsker | FailingAsker | None, message: str
) -> None:
    ctx = context(workspace, Mode.PLAN)
    ctx.permissions.asker = asker
    with pytest.raises(ToolError, match=message) as refused:
        await ExitPlanMode().run({}, ctx)
    assert "the session stays in plan mode" in str(refused.value)
    assert ctx.permissions.mode is Mode.PLAN


async def test_exit_plan_mode_outside_plan_mode_is_refused_without_asking(
    workspace: Path,
) -> None:
    asker = ScriptedAsker(["auto-edit"])
    with pytest.raises(ToolError, match="in ask mode, not in plan mode"):
        await ExitPlanMode().run({"plan": "x"}, context(workspace, Mode.ASK, asker))
    with pytest.raises(ToolError, match="bad arguments"):
        await ExitPlanMode().run({"plan": 3}, context(workspace, Mode.PLAN, asker))
    assert asker.asked == []
