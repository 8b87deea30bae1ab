"""Modes and permission decisions, with a scripted asker: what each mode permits, allow-always
memory, a denied or cancelled request leaving files untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.tools.base import ToolError
from acp_agent.tools.display import DiffView, View
from acp_agent.tools.edit_file import EditFile
from acp_agent.tools.guard import command_key
from acp_agent.tools.permissions import Action, CallInfo, Mode, OptionKind, Permissions
from acp_agent.tools.run_command import RunCommand
from acp_agent.tools.write_file import WriteFile
from tests.tools.support import ScriptedAsker, context

CALL = CallInfo("c1", "Write a.txt", "edit", [], {})


async def decide(permissions: Permissions, action: Action, key: str = "k") -> bool:
    return (await permissions.decide(action, key, "things", CALL, [])).allowed


@pytest.mark.parametrize(
    ("mode", "edit", "execute"),
    [
        (Mode.READ_ONLY, False, False),
        (Mode.ASK, None, None),
        (Mode.AUTO_EDIT, True, None),
        (Mode.FULL_ACCESS, True, True),
    ],
)
async def test_what_each_mode_permits(mode: Mode, edit: bool | None, execute: bool | None) -> None:
    """``None``: the mode asks (and the asker here rejects)."""
    for action, expected in ((Action.EDIT, edit), (Action.EXECUTE, execute)):
        asker = ScriptedAsker(["reject_once"])
        allowed = await decide(Permissions(mode, asker), action)
        assert allowed is bool(expected)
        assert len(asker.asked) == (1 if expected is None else 0), (mode, action)


async def test_allow_always_is_remembered_for_the_session_and_key() -> None:
    asker = ScriptedAsker(["allow_always", "allow_once", "reject_once"])
    permissions = Permissions(Mode.ASK, asker)
    assert await decide(permissions, Action.EDIT, "edit")
    assert await decide(permissions, Action.EDIT, "edit")  # not asked again
    assert await decide(permissions, Action.EXECUTE, "execute:ls")  # another key: asked
    assert not await decide(permissions, Action.EXECUTE, "execute:ls")  # allow_once: asked
    assert len(asker.asked) == 3
    permissions.mode = Mode.READ_ONLY
    assert not await decide(permissions, Action.EDIT, "edit"), "read-only beats memory"


async def test_the_question_offers_allow_always_and_shows_the_preview() -> None:
    asker = ScriptedAsker(["allow_once"])
    preview: list[View] = [DiffView("/w/a.txt", "new", "old")]
    await Permissions(Mode.ASK, asker).decide(Action.EDIT, "edit", "file edits", CALL, preview)
    (request,) = asker.asked
    assert request.call == CALL and request.preview == preview
    assert [o.kind for o in request.options] == [
        OptionKind.ALLOW_ONCE,
        OptionKind.ALLOW_ALWAYS,
        OptionKind.REJECT_ONCE,
    ]
    assert request.options[1].name == "Always allow file edits in this session"


async def test_without_an_asker_ask_mode_refuses() -> None:
    decision = await Permissions(Mode.ASK).decide(Action.EDIT, "edit", "file edits", CALL, [])
    assert not decision.allowed and "no client to ask" in decision.reason


@pytest.mark.parametrize(
    ("answer", "message"),
    [("reject_once", "permission denied: the user rejected it"), (None, "cancelled")],
)
async def test_denied_or_cancelled_permission_leaves_files_untouched(
    workspace: Path, answer: str | None, message: str
) -> None:
    path = workspace / "a.txt"
    path.write_text("keep\n", encoding="utf-8")
    attempts: tuple[tuple[WriteFile | EditFile, dict[str, object]], ...] = (
        (WriteFile(), {"path": "a.txt", "content": "gone\n"}),
        (EditFile(), {"path": "a.txt", "old_string": "keep", "new_string": "gone"}),
        (WriteFile(), {"path": "b.txt", "content": "new\n"}),
    )
    for tool, args in attempts:
        ctx = context(workspace, Mode.ASK, ScriptedAsker([answer]))
        with pytest.raises(ToolError, match=message):
            await tool.run(args, ctx)
    assert path.read_text(encoding="utf-8") == "keep\n"
    assert not (workspace / "b.txt").exists()


async def test_the_permission_request_carries_the_diff(workspace: Path) -> None:
    (workspace / "a.txt").write_text("one\n", encoding="utf-8")
    asker = ScriptedAsker(["allow_once"])
    args: dict[str, object] = {"path": "a.txt", "old_string": "one", "new_string": "two"}
    await EditFile().run(args, context(workspace, Mode.ASK, asker))
    assert asker.asked[0].preview == [DiffView(str(workspace / "a.txt"), "two", "one")]
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "two\n"


async def test_read_only_mode_refuses_commands_without_running_them(workspace: Path) -> None:
    ctx = context(workspace, Mode.READ_ONLY)
    with pytest.raises(ToolError, match="read-only mode"):
        await RunCommand().run({"command": "touch ran"}, ctx)
    assert not (workspace / "ran").exists()


@pytest.mark.parametrize(
    ("command", "key"),
    [
        ("pytest -q tests", "execute:pytest"),
        ("  ls   -la ", "execute:ls"),
        ("ls && rm -rf /", "execute:ls && rm -rf /"),
        ("echo $HOME", "execute:echo $HOME"),
        ("cat a | wc", "execute:cat a | wc"),
        ("echo 'unbalanced", "execute:echo 'unbalanced"),
    ],
)
def test_command_keys_cover_a_program_only_without_shell_operators(command: str, key: str) -> None:
    assert command_key(command)[0] == key
