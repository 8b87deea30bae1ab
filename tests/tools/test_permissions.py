"""Modes and permission decisions, with a scripted asker: what each mode permits, allow-always
memory, a denied or cancelled request leaving files untouched."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.permissions.patterns import Target
from acp_agent.permissions.rules import Subject
from acp_agent.permissions.suggest import command_label, remembered
from acp_agent.tools.base import ToolError
from acp_agent.tools.display import DiffView, View
from acp_agent.tools.edit_file import EditFile
from acp_agent.tools.permissions import Action, CallInfo, Mode, OptionKind, Permissions
from acp_agent.tools.run_command import RunCommand
from acp_agent.tools.write_file import WriteFile
from tests.tools.support import ScriptedAsker, context

CALL = CallInfo("c1", "Write a.txt", "edit", [], {})


EDIT = Subject(Target.EDIT, "/w/a.txt", "/w")
LS = Subject(Target.RUN_COMMAND, "ls -la", "/w")
TARGETS = {Action.EDIT: EDIT, Action.EXECUTE: LS}


async def decide(permissions: Permissions, action: Action, subject: Subject | None = None) -> bool:
    asked = subject or TARGETS[action]
    return (await permissions.decide(action, asked, "things", CALL, [])).allowed


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


async def test_allow_always_is_remembered_for_the_session_as_a_rule() -> None:
    asker = ScriptedAsker(["allow_always", "allow_once", "reject_once"])
    permissions = Permissions(Mode.ASK, asker)
    assert await decide(permissions, Action.EDIT)
    assert await decide(permissions, Action.EDIT, Subject(Target.EDIT, "/w/b/c.txt", "/w"))
    assert await decide(permissions, Action.EXECUTE)  # another kind: asked
    assert not await decide(permissions, Action.EXECUTE)  # allow_once remembered nothing
    assert len(asker.asked) == 3
    assert [(r.pattern.text, r.source) for r in permissions.rules.listed()] == [
        ("edit(**)", "session")
    ]
    permissions.mode = Mode.READ_ONLY
    assert not await decide(permissions, Action.EDIT), "read-only beats an allow rule"


async def test_the_question_offers_allow_always_and_shows_the_preview() -> None:
    asker = ScriptedAsker(["allow_once"])
    preview: list[View] = [DiffView("/w/a.txt", "new", "old")]
    await Permissions(Mode.ASK, asker).decide(Action.EDIT, EDIT, "file edits", CALL, preview)
    (request,) = asker.asked
    assert request.call == CALL and request.preview == preview
    assert [o.kind for o in request.options] == [
        OptionKind.ALLOW_ONCE,
        OptionKind.ALLOW_ALWAYS,
        OptionKind.REJECT_ONCE,
    ]
    assert request.options[1].name == "Always allow file edits in this session"


async def test_without_an_asker_ask_mode_refuses() -> None:
    decision = await Permissions(Mode.ASK).decide(Action.EDIT, EDIT, "file edits", CALL, [])
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
    ("command", "rules", "label"),
    [
        ("pytest -q tests", ["run_command(pytest *)"], "`pytest` commands"),
        ("  ls   -la ", ["run_command(ls *)"], "`ls` commands"),
        (
            "ls && rm -rf /",
            ["run_command(ls)", "run_command(rm -rf /)"],
            "the command `ls && rm -rf /`",
        ),
        ("echo $HOME", ["run_command(echo '$HOME')"], "the command `echo $HOME`"),
        ("cat a | wc", ["run_command(cat a)", "run_command(wc)"], "the command `cat a | wc`"),
        ("echo 'unbalanced", [], "the command `echo 'unbalanced`"),
        ("$CMD x", [], "the command `$CMD x`"),
        ("echo '*' | wc", [], "the command `echo '*' | wc`"),
    ],
)
def test_what_always_allowing_a_command_remembers(
    command: str, rules: list[str], label: str
) -> None:
    """One program: that program with any arguments; a compound command: each simple command
    exactly; what the parser cannot read whole: nothing (no "Always" option is offered)."""
    subject = Subject(Target.RUN_COMMAND, command, "/w")
    assert [p.text for p in remembered(subject)] == rules
    assert command_label(command) == label
