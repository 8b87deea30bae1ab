"""Session modes and permission decisions for the tools that change things.

Theory of operation
-------------------
Every session has one ``Permissions``: its mode, the actions the user allowed for the rest of the
session ("allow always"), and an asker (the ACP client's ``session/request_permission``; ``None``
when nobody can be asked). Reading (``read_file``, ``list_dir``, ``search``) and the plan never
ask. Writing files (``write_file``, ``edit_file``, ``multi_edit``: action ``edit``), running
commands (``run_command``: action ``execute``), fetching a URL (``web_fetch``: action ``fetch``)
and calling an MCP server's tool (``mcp/tool.py``: action ``mcp-read`` for a tool annotated
``readOnlyHint: true``, else ``mcp``) call ``decide`` first, *after* computing what they would
do (so the request can show the diff) and *before* touching anything. ``POLICY`` is the table:

| mode | edit | execute | fetch | mcp-read | mcp |
|---|---|---|---|---|---|
| ``read-only`` | refused | refused | refused | allowed | refused |
| ``plan`` | refused | refused | refused | allowed | refused |
| ``ask`` (default) | ask | ask | ask | ask | ask |
| ``auto-edit`` | allowed | ask | ask | allowed | ask |
| ``full-access`` | allowed | allowed | allowed | allowed | allowed |

``plan`` is ``read-only`` for the model to plan in: it leaves it only through ``exit_plan_mode``
(``plan_mode.py``), which asks the user and, approved, switches the mode with ``switch`` — the
session listens (``on_switch``: it persists the mode and tells the client, as a client's
``session/set_mode`` would).

An answer ``allow_always`` remembers the call's *key* for the session: ``edit`` for every file
write, ``execute:<program>`` for commands that are a plain program with arguments (no shell
operators), else ``execute:<the exact command line>``, ``fetch:<host>`` for fetches from one
host, ``mcp:<server>:<tool>`` for an MCP tool.
A remembered key skips the question where the table says ask, never where it says refused. The
``cancelled`` outcome (the client cancelled the prompt turn while asking) cancels the call: it
does not run and its result says so.
Paths outside the session roots are refused by the tools in every mode (``base.confine``).

The mode set is exposed twice on the wire, kept in sync by ``acp/server.py``: as ACP ``modes`` and
as the ``configOptions`` entry ``mode`` (``category: "mode"``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import StrEnum
from typing import Protocol

import msgspec
import structlog

from acp_agent.tools.display import View

log = structlog.get_logger("acp_agent.tools")


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
_ACTIONS = (Action.EDIT, Action.EXECUTE, Action.FETCH, Action.MCP_READ, Action.MCP)
POLICY: dict[Mode, dict[Action, Rule]] = {
    mode: dict(zip(_ACTIONS, rules, strict=True))
    for mode, rules in (
        (Mode.READ_ONLY, (_R, _R, _R, _A, _R)),
        (Mode.PLAN, (_R, _R, _R, _A, _R)),
        (Mode.ASK, (_Q, _Q, _Q, _Q, _Q)),
        (Mode.AUTO_EDIT, (_A, _Q, _Q, _A, _Q)),
        (Mode.FULL_ACCESS, (_A, _A, _A, _A, _A)),
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


class Permissions:
    """One session's mode, remembered allowances and asker."""

    def __init__(
        self,
        mode: Mode = DEFAULT_MODE,
        asker: PermissionAsker | None = None,
        session_id: str | None = None,
    ) -> None:
        self.mode = mode
        self.asker = asker
        self.read_only_turn = False
        """The running turn is decided as in read-only mode, whatever ``mode`` says (a
        ``/review`` turn: ``commands/words.py``); set when each prompt is admitted."""
        self.on_switch: Callable[[Mode], Awaitable[None]] | None = None
        """Set by the session: persists a mode switched from inside and tells the client."""
        self._always: set[str] = set()
        self._log = log.bind(session_id=session_id)

    async def switch(self, mode: Mode) -> None:
        """The session goes to ``mode`` because the user approved it inside a turn (a tool
        asked); through the session when it listens, so it is kept and announced."""
        self._log.info("mode_switched", mode=str(mode), previous=str(self.mode))
        if self.on_switch is None:
            self.mode = mode
        else:
            await self.on_switch(mode)

    def remembered(self, key: str) -> bool:
        return key in self._always

    async def decide(
        self, action: Action, key: str, label: str, call: CallInfo, preview: list[View]
    ) -> Decision:
        """May ``call`` perform ``action``? ``label`` names it for humans ("file edits")."""
        decision = await self._decide(action, key, label, call, preview)
        self._log.info(
            "permission_decided",
            call_id=call.id,
            action=str(action),
            key=key,
            mode=str(self.mode),
            allowed=decision.allowed,
            cancelled=decision.cancelled,
        )
        return decision

    async def _decide(
        self, action: Action, key: str, label: str, call: CallInfo, preview: list[View]
    ) -> Decision:
        mode = Mode.READ_ONLY if self.read_only_turn else self.mode
        rule = POLICY[mode][action]
        if rule is Rule.REFUSE and self.read_only_turn:
            return Decision(False, f"this turn is read-only (a review): {label} are not allowed")
        if rule is Rule.REFUSE:
            reason = f"the session is in {mode} mode: {label} are not allowed"
            if mode is Mode.PLAN:
                reason += f" ({PLAN_MODE_HINT})"
            return Decision(False, reason)
        if rule is Rule.ALLOW:
            return Decision(True, f"allowed by mode {mode}")
        if key in self._always:
            return Decision(True, "allowed always for this session")
        if self.asker is None:
            return Decision(False, f"no client to ask for permission ({label}, mode {self.mode})")
        return await self._ask(self.asker, key, label, call, preview)

    async def _ask(
        self, asker: PermissionAsker, key: str, label: str, call: CallInfo, preview: list[View]
    ) -> Decision:
        options = _options(label)
        try:
            chosen = await asker.ask(PermissionRequest(call, options, preview))
        except AskFailed as exc:
            return Decision(False, f"the permission request failed: {exc}")
        if chosen is None:
            return Decision(False, "the permission request was cancelled", cancelled=True)
        kind = next((o.kind for o in options if o.option_id == chosen), None)
        if kind is OptionKind.ALLOW_ALWAYS:
            self._always.add(key)
        if kind in (OptionKind.ALLOW_ONCE, OptionKind.ALLOW_ALWAYS):
            return Decision(True, f"allowed by the user ({kind})")
        return Decision(False, "the user rejected it")


def _options(label: str) -> list[PermissionOption]:
    return [
        PermissionOption("allow_once", "Allow", OptionKind.ALLOW_ONCE),
        PermissionOption(
            "allow_always", f"Always allow {label} in this session", OptionKind.ALLOW_ALWAYS
        ),
        PermissionOption("reject_once", "Reject", OptionKind.REJECT_ONCE),
    ]


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
