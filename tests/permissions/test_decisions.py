"""Rules against modes, through ``Permissions.decide``: deny > ask > allow > the mode's default;
read-only and plan refuse whatever allow says; deny holds in full-access and names its rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from acp_agent.content import TextContent
from acp_agent.permissions.book import SessionRules
from acp_agent.permissions.patterns import Target, parse_pattern
from acp_agent.permissions.rules import Effect, Rule, Source, Subject
from acp_agent.permissions.store import ProjectStore
from acp_agent.tools.base import ToolContext, ToolError
from acp_agent.tools.permissions import Action, CallInfo, Mode, Permissions
from acp_agent.tools.read_file import ReadFile
from acp_agent.tools.run_command import RunCommand
from acp_agent.tools.search import Search
from acp_agent.tools.write_file import WriteFile
from tests.tools.support import ScriptedAsker

CALL = CallInfo("c1", "Run", "execute", [], {})


def config(**lists: list[str]) -> tuple[Rule, ...]:
    return tuple(
        Rule(Effect(effect), parse_pattern(p), Source.CONFIG)
        for effect, patterns in lists.items()
        for p in patterns
    )


def command(text: str) -> Subject:
    return Subject(Target.RUN_COMMAND, text, "/w", ("/w",))


async def decided(
    mode: Mode, rules: tuple[Rule, ...], text: str, answers: list[str | None] | None = None
) -> tuple[bool, str, int]:
    asker = ScriptedAsker(answers or ["reject_once"])
    permissions = Permissions(mode, asker, rules=SessionRules(rules))
    decision = await permissions.decide(Action.EXECUTE, command(text), "it", CALL, [])
    return decision.allowed, decision.reason, len(asker.asked)


RULES = config(
    allow=["run_command(git *)", "run_command(ls *)"],
    ask=["run_command(git push *)"],
    deny=["run_command(rm *)"],
)


@pytest.mark.parametrize(
    ("mode", "text", "allowed", "asked"),
    [
        (Mode.ASK, "git status", True, 0),  # allow over the mode's ask
        (Mode.ASK, "make", False, 1),  # no rule: the mode asks (rejected here)
        (Mode.ASK, "git push origin", False, 1),  # ask over allow
        (Mode.ASK, "ls && rm x", False, 0),  # deny over all
        (Mode.AUTO_EDIT, "git status", True, 0),
        (Mode.FULL_ACCESS, "make", True, 0),  # the mode allows
        (Mode.FULL_ACCESS, "git push origin", False, 1),  # an ask rule asks in full-access
        (Mode.FULL_ACCESS, "true && rm -rf x", False, 0),  # deny holds in full-access
        (Mode.READ_ONLY, "git status", False, 0),  # read-only whatever allow says
        (Mode.PLAN, "ls", False, 0),
    ],
)
async def test_precedence(mode: Mode, text: str, allowed: bool, asked: int) -> None:
    result = await decided(mode, RULES, text)
    assert (result[0], result[2]) == (allowed, asked)


async def test_a_denial_names_the_rule_and_its_source() -> None:
    allowed, reason, _ = await decided(Mode.FULL_ACCESS, RULES, "ls; rm -rf build")
    assert not allowed
    assert reason == "the rule deny run_command(rm *) (config) refuses it"


async def test_read_only_refuses_with_the_mode_not_the_rule() -> None:
    _, reason, _ = await decided(Mode.READ_ONLY, RULES, "git status")
    assert "read-only mode" in reason


async def test_a_question_from_an_ask_rule_offers_no_always() -> None:
    asker = ScriptedAsker(["allow_once"])
    permissions = Permissions(Mode.FULL_ACCESS, asker, rules=SessionRules(RULES))
    await permissions.decide(Action.EXECUTE, command("git push"), "it", CALL, [])
    (request,) = asker.asked
    assert [o.option_id for o in request.options] == ["allow_once", "reject_once"]


async def test_allow_project_saves_a_rule_another_session_reads(tmp_path: Path) -> None:
    store = ProjectStore(tmp_path / "state", "/w")
    asker = ScriptedAsker(["allow_project"])
    first = Permissions(Mode.ASK, asker, rules=SessionRules((), store))
    assert (await first.decide(Action.EXECUTE, command("pytest -q"), "it", CALL, [])).allowed
    (request,) = asker.asked
    project = [o for o in request.options if o.option_id == "allow_project"]
    assert [(o.kind, o.name) for o in project] == [
        ("allow_always", "Always allow it in this project")
    ]
    again = Permissions(
        Mode.ASK, ScriptedAsker([]), rules=SessionRules((), ProjectStore(tmp_path / "state", "/w"))
    )
    decision = await again.decide(Action.EXECUTE, command("pytest tests"), "it", CALL, [])
    assert decision.allowed and "run_command(pytest *) (project)" in decision.reason
    other = Permissions(
        Mode.ASK,
        ScriptedAsker(["reject_once"]),
        rules=SessionRules((), ProjectStore(tmp_path / "state", "/elsewhere")),
    )
    assert not (await other.decide(Action.EXECUTE, command("pytest"), "it", CALL, [])).allowed


async def test_full_access_deny_refuses_before_running(workspace: Path) -> None:
    rules = SessionRules(config(deny=["run_command(touch *)", "edit(locked/**)", "read(.env)"]))
    permissions = Permissions(Mode.FULL_ACCESS, rules=rules)
    ctx = ToolContext("s1", workspace, permissions=permissions)
    with pytest.raises(ToolError, match=r"deny run_command\(touch \*\) \(config\)"):
        await RunCommand().run({"command": "echo a && touch ran"}, ctx)
    assert not (workspace / "ran").exists()
    with pytest.raises(ToolError, match=r"deny edit\(locked/\*\*\)"):
        await WriteFile().run({"path": "sub/../locked/a.txt", "content": "x"}, ctx)
    assert not (workspace / "locked").exists()
    (workspace / ".env").write_text("KEY=secret\n", encoding="utf-8")
    with pytest.raises(ToolError, match=r"deny read\(\.env\)"):
        await ReadFile().run({"path": "./.env"}, ctx)
    (workspace / "open.txt").write_text("secret too\n", encoding="utf-8")
    found = await Search().run({"pattern": "secret"}, ctx)
    assert [block.text for block in found.content if isinstance(block, TextContent)] == [
        "open.txt:1: secret too"
    ], "search skips the denied file"
