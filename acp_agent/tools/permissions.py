"""Session modes and permission decisions for the tools that change things.

Theory of operation
-------------------
Every session has one ``Permissions``: its mode, its permission rules (config, project and
session: ``acp_agent/permissions/``), and an asker (the ACP client's
``session/request_permission``; ``None`` when nobody can be asked). The plan never asks.
Writing files (``write_file``, ``edit_file``, ``multi_edit``: action ``edit``), running
commands (``run_command``: action ``execute``), fetching a URL (``web_fetch``: action ``fetch``)
and calling an MCP server's tool (``mcp/tool.py``: action ``mcp-read`` for a tool annotated
``readOnlyHint: true``, else ``mcp``) call ``decide`` first, *after* computing what they would
do (so the request can show the diff) and *before* touching anything. ``POLICY`` is the table:

| mode | edit | execute | fetch | mcp-read | mcp | read |
|---|---|---|---|---|---|---|
| ``read-only`` | refused | refused | refused | allowed | refused | allowed |
| ``plan`` | refused | refused | refused | allowed | refused | allowed |
| ``ask`` (default) | ask | ask | ask | ask | ask | allowed |
| ``auto-edit`` | allowed | ask | ask | allowed | ask | allowed |
| ``full-access`` | allowed | allowed | allowed | allowed | allowed | allowed |

``plan`` is ``read-only`` for the model to plan in: it leaves it only through ``exit_plan_mode``
(``plan_mode.py``), which asks the user and, approved, switches the mode with ``switch`` — the
session listens (``on_switch``: it persists the mode and tells the client, as a client's
``session/set_mode`` would).

Permission rules (``acp_agent/permissions/``, docs/permissions.md) come first: each tool names
what it does as a ``Subject`` (the command line, the resolved path, the host, ``server/tool``).
A matching ``deny`` rule refuses the call in every mode, ``full-access`` included, and the
result names the rule and its source; then the mode's refusals (``read-only``, ``plan``, a
review turn) hold whatever ``allow`` says; then a matching ``ask`` rule asks (in every mode);
then ``allow`` rules allow; then the table decides. Reads (action ``read``: ``read_file``,
``list_dir``, ``search``, ``glob_files``) are allowed by every mode, so only rules refuse or
ask about them.

The question offers ``allow_once``, ``allow_always`` (a ``session`` rule, kept while the
session's tools live), ``allow_project`` (kind ``allow_always``: a ``project`` rule saved under
the state directory for every later session of the same cwd, in any process) and
``reject_once``. What the two "always" answers remember is ``permissions/suggest.py``'s: the
program (``run_command(git *)``) or, for a compound command, each simple command's words;
``edit(**)``; ``read(PATH)``; ``web_fetch(HOST)``; ``mcp(SERVER/TOOL)``. They are not offered
when the question comes from an ``ask`` rule (which outranks every ``allow``) or when nothing
could be remembered (a command the parser cannot read). The ``cancelled`` outcome (the client
cancelled the prompt turn while asking) cancels the call: it does not run and its result says so.
Paths outside the session roots are refused by the tools in every mode (``base.confine``).

The mode set is exposed twice on the wire, kept in sync by ``acp/server.py``: as ACP ``modes`` and
as the ``configOptions`` entry ``mode`` (``category: "mode"``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Protocol

import msgspec

from acp_agent.logs import get_logger
from acp_agent.permissions.book import SessionRules
from acp_agent.permissions.patterns import Pattern
from acp_agent.permissions.rules import Effect, Rule as PermissionRule, Source, Subject
from acp_agent.permissions.suggest import remembered
from acp_agent.tools.display import View

log = get_logger("acp_agent.tools")


class Mode(StrEnum):
    READ_ONLY = "read-only"
    PLAN = "plan"
    ASK = "ask"
    AUTO_EDIT = "auto-edit"
    FULL_ACCESS = "full-access"


class ModeInfo(msgspec.Struct, frozen=True):
    id: Mode
    name: str
    description: str


MODES: tuple[ModeInfo, ...] = (
    ModeInfo(Mode.READ_ONLY, "Read only", "Read and search files; no edits, no commands"),
    ModeInfo(
        Mode.PLAN,
        "Plan",
        "Read, search and write a plan; leaving plan mode to carry it out is asked",
    ),
    ModeInfo(Mode.ASK, "Ask", "Ask before every file edit and every command"),
    ModeInfo(
        Mode.AUTO_EDIT, "Auto-edit", "Edit files in the workspace freely; ask before commands"
    ),
    ModeInfo(Mode.FULL_ACCESS, "Full access", "Edit files and run commands without asking"),
)
DEFAULT_MODE = Mode.ASK


class Action(StrEnum):
    READ = "read"
    EDIT = "edit"
    EXECUTE = "execute"
    FETCH = "fetch"
    MCP_READ = "mcp-read"
    MCP = "mcp"


class Rule(StrEnum):
    ALLOW = "allowed"
    ASK = "ask"
    REFUSE = "refused"


_A, _Q, _R = Rule.ALLOW, Rule.ASK, Rule.REFUSE
_ACTIONS = (Action.EDIT, Action.EXECUTE, Action.FETCH, Action.MCP_READ, Action.MCP, Action.READ)
POLICY: dict[Mode, dict[Action, Rule]] = {
    mode: dict(zip(_ACTIONS, rules, strict=True))
    for mode, rules in (
        (Mode.READ_ONLY, (_R, _R, _R, _A, _R, _A)),
        (Mode.PLAN, (_R, _R, _R, _A, _R, _A)),
        (Mode.ASK, (_Q, _Q, _Q, _Q, _Q, _A)),
        (Mode.AUTO_EDIT, (_A, _Q, _Q, _A, _Q, _A)),
        (Mode.FULL_ACCESS, (_A, _A, _A, _A, _A, _A)),
    )
}
PLAN_MODE_HINT = (
    "read, search and plan (todo_write), then propose the plan with exit_plan_mode, "
    "which asks the user to leave plan mode"
)


class OptionKind(StrEnum):
    """ACP ``PermissionOptionKind``."""

    ALLOW_ONCE = "allow_once"
    ALLOW_ALWAYS = "allow_always"
    REJECT_ONCE = "reject_once"
    REJECT_ALWAYS = "reject_always"


class PermissionOption(msgspec.Struct, frozen=True):
    option_id: str
    name: str
    kind: OptionKind


class CallInfo(msgspec.Struct, frozen=True):
    """The tool call a question is about, as the client already saw it in ``tool_call``."""

    id: str
    title: str
    kind: str
    locations: list[str]
    raw_input: dict[str, object]


class PermissionRequest(msgspec.Struct, frozen=True):
    call: CallInfo
    options: list[PermissionOption]
    preview: list[View] = msgspec.field(default_factory=list)
    message: str | None = None
    """Text for the user to read before answering (the plan ``exit_plan_mode`` proposes)."""


class AskFailed(Exception):
    """The question could not be asked or answered (the client errored, the wire is gone)."""


class PermissionAsker(Protocol):
    async def ask(self, request: PermissionRequest) -> str | None:
        """The chosen ``option_id``, or ``None`` when the client answered ``cancelled``.

        Raises ``AskFailed``."""
        ...


class Decision(msgspec.Struct, frozen=True):
    allowed: bool
    reason: str
    cancelled: bool = False


ALLOW_PROJECT = "allow_project"


class Permissions:
    """One session's mode, rules and asker."""

    def __init__(
        self,
        mode: Mode = DEFAULT_MODE,
        asker: PermissionAsker | None = None,
        session_id: str | None = None,
        rules: SessionRules | None = None,
    ) -> None:
        self.mode = mode
        self.asker = asker
        self.rules = rules or SessionRules()
        self.read_only_turn = False
        """The running turn is decided as in read-only mode, whatever ``mode`` says (a
        ``/review`` turn: ``commands/words.py``); set when each prompt is admitted."""
        self.on_switch: Callable[[Mode], Awaitable[None]] | None = None
        """Set by the session: persists a mode switched from inside and tells the client."""
        self._log = log.bind(session_id=session_id)

    def for_child(self, asker: PermissionAsker | None, session_id: str) -> Permissions:
        """A subagent's: this session's mode to start from, its rules and remembered answers
        (the same ``rules``: an "allow always" in either holds for both) and ``asker``."""
        return Permissions(self.mode, asker, session_id, self.rules)

    async def switch(self, mode: Mode) -> None:
        """The session goes to ``mode`` because the user approved it inside a turn (a tool
        asked); through the session when it listens, so it is kept and announced."""
        self._log.info("mode_switched", mode=str(mode), previous=str(self.mode))
        if self.on_switch is None:
            self.mode = mode
        else:
            await self.on_switch(mode)

    async def decide(
        self, action: Action, subject: Subject, label: str, call: CallInfo, preview: list[View]
    ) -> Decision:
        """May ``call`` perform ``action`` on ``subject``? ``label`` names it ("file edits")."""
        decision = await self._decide(action, subject, label, call, preview)
        self._log.info(
            "permission_decided",
            call_id=call.id,
            action=str(action),
            subject=subject.value,
            mode=str(self.mode),
            allowed=decision.allowed,
            cancelled=decision.cancelled,
        )
        return decision

    async def _decide(
        self, action: Action, subject: Subject, label: str, call: CallInfo, preview: list[View]
    ) -> Decision:
        verdict = self.rules.weigh(subject)
        if verdict.effect is Effect.DENY and verdict.rule is not None:
            return Decision(False, f"{verdict.rule.describe()} refuses it")
        refused = self._refused(action, label)
        if refused is not None:
            return refused
        if verdict.effect is Effect.ASK and verdict.rule is not None:
            return await self._ask(subject, label, call, preview, ruled=verdict.rule)
        if verdict.effect is Effect.ALLOW:
            by = verdict.rule.describe() if verdict.rule is not None else "the allow rules"
            return Decision(True, f"allowed by {by}")
        if POLICY[self.mode][action] is Rule.ALLOW:
            return Decision(True, f"allowed by mode {self.mode}")
        return await self._ask(subject, label, call, preview)

    def _refused(self, action: Action, label: str) -> Decision | None:
        mode = Mode.READ_ONLY if self.read_only_turn else self.mode
        if POLICY[mode][action] is not Rule.REFUSE:
            return None
        if self.read_only_turn:
            return Decision(False, f"this turn is read-only (a review): {label} are not allowed")
        reason = f"the session is in {mode} mode: {label} are not allowed"
        if mode is Mode.PLAN:
            reason += f" ({PLAN_MODE_HINT})"
        return Decision(False, reason)

    async def _ask(
        self,
        subject: Subject,
        label: str,
        call: CallInfo,
        preview: list[View],
        ruled: PermissionRule | None = None,
    ) -> Decision:
        if self.asker is None:
            why = f"{ruled.describe()} asks" if ruled is not None else f"mode {self.mode}"
            return Decision(False, f"no client to ask for permission ({label}, {why})")
        patterns = () if ruled is not None else remembered(subject)
        options = _options(label, bool(patterns), self.rules.store is not None)
        try:
            chosen = await self.asker.ask(PermissionRequest(call, options, preview))
        except AskFailed as exc:
            return Decision(False, f"the permission request failed: {exc}")
        if chosen is None:
            return Decision(False, "the permission request was cancelled", cancelled=True)
        kind = next((o.kind for o in options if o.option_id == chosen), None)
        if kind is OptionKind.ALLOW_ALWAYS:
            source = Source.PROJECT if chosen == ALLOW_PROJECT else Source.SESSION
            self._remember(patterns, source)
            where = "this project" if source is Source.PROJECT else "this session"
            return Decision(True, f"allowed by the user (always, in {where})")
        if kind is OptionKind.ALLOW_ONCE:
            return Decision(True, f"allowed by the user ({kind})")
        return Decision(False, "the user rejected it")

    def _remember(self, patterns: tuple[Pattern, ...], source: Source) -> None:
        for pattern in patterns:
            self.rules.add(PermissionRule(Effect.ALLOW, pattern, source))
            self._log.info("permission_rule_added", rule=pattern.text, source=str(source))


def _options(label: str, always: bool, project: bool) -> list[PermissionOption]:
    options = [PermissionOption("allow_once", "Allow", OptionKind.ALLOW_ONCE)]
    if always:
        options.append(
            PermissionOption(
                "allow_always", f"Always allow {label} in this session", OptionKind.ALLOW_ALWAYS
            )
        )
    if always and project:
        options.append(
            PermissionOption(
                ALLOW_PROJECT, f"Always allow {label} in this project", OptionKind.ALLOW_ALWAYS
            )
        )
    options.append(PermissionOption("reject_once", "Reject", OptionKind.REJECT_ONCE))
    return options


def parse_mode(value: str) -> Mode | None:
    try:
        return Mode(value)
    except ValueError:
        return None


class UnknownMode(ValueError):
    """A mode name that is no mode; the message lists the modes there are."""

    def __init__(self, value: object) -> None:
        known = ", ".join(m.id for m in MODES)
        super().__init__(f"unknown mode {value!r}; one of {known}")


def require_mode(value: object) -> Mode:
    """The mode named ``value``; ``UnknownMode`` if there is none."""
    mode = parse_mode(value) if isinstance(value, str) else None
    if mode is None:
        raise UnknownMode(value)
    return mode
