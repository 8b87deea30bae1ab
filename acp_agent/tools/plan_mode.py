"""``exit_plan_mode {plan?}``: the model's way out of plan mode, decided by the user.

Offered only while the session is in ``plan`` mode (``base.Conditional``). The call asks through
the session's permission asker (``session/request_permission``) with the plan as the question's
text and three options: switch to ``auto-edit`` (kind ``allow_always``), switch to ``ask``
(``allow_once``), keep planning (``reject_once``). An approval switches the mode through
``Permissions.switch`` — the session persists it and tells the client as ``session/set_mode``
would (``current_mode_update``, ``config_option_update``) — and the result says which mode the
model now works in. A rejection, a cancelled or failed question, or no client to ask keep plan
mode, and the (error) result says so. Outside plan mode the call is refused.
"""

from __future__ import annotations

import msgspec

from acp_agent.content import TextContent
from acp_agent.logs import get_logger
from acp_agent.tools.args import parse
from acp_agent.tools.base import Location, ToolContext, ToolError, ToolKind, ToolOutput
from acp_agent.tools.permissions import (
    AskFailed,
    CallInfo,
    Mode,
    OptionKind,
    PermissionOption,
    PermissionRequest,
)

log = get_logger("acp_agent.tools")

NAME = "exit_plan_mode"
KEEP_PLANNING = "keep-planning"
OPTIONS = [
    PermissionOption(str(Mode.AUTO_EDIT), "Yes, switch to Auto-edit mode", OptionKind.ALLOW_ALWAYS),
    PermissionOption(str(Mode.ASK), "Yes, switch to Ask mode", OptionKind.ALLOW_ONCE),
    PermissionOption(KEEP_PLANNING, "No, keep planning", OptionKind.REJECT_ONCE),
]
TARGETS = {str(Mode.AUTO_EDIT): Mode.AUTO_EDIT, str(Mode.ASK): Mode.ASK}
STAYS = "the session stays in plan mode"
MAX_PLAN_CHARS = 64 << 10


class ExitPlanModeArgs(msgspec.Struct, frozen=True):
    plan: str | None = None


class ExitPlanMode:
    name = NAME
    description = (
        "You are in plan mode: you may read and search, and keep a plan with todo_write, but "
        "not edit files or run commands. When the plan is ready, call this with the plan "
        "(markdown) to ask the user to approve it and leave plan mode; if they approve, you may "
        "then carry it out. If they decline, ask what to change and keep planning."
    )
    kind = ToolKind.SWITCH_MODE
    parameters: dict[str, object] = {  # noqa: RUF012 - a JSON schema, read only
        "type": "object",
        "properties": {
            "plan": {"type": "string", "description": "the plan to approve, in markdown"},
        },
    }

    def offered(self, ctx: ToolContext) -> bool:
        return ctx.permissions.mode is Mode.PLAN

    def title(self, arguments: dict[str, object]) -> str:
        return "Leave plan mode"

    def locations(self, arguments: dict[str, object], ctx: ToolContext) -> list[Location]:
        return []

    async def run(self, arguments: dict[str, object], ctx: ToolContext) -> ToolOutput:
        args = parse(arguments, ExitPlanModeArgs, NAME)
        if args.plan is not None and len(args.plan) > MAX_PLAN_CHARS:
            raise ToolError(f"{NAME}: the plan is longer than {MAX_PLAN_CHARS} characters")
        mode = ctx.permissions.mode
        if mode is not Mode.PLAN:
            raise ToolError(f"{NAME}: the session is in {mode} mode, not in plan mode")
        chosen = await self._ask(args.plan, arguments, ctx)
        log.info("plan_mode_exit_answered", session_id=ctx.session_id, chosen=chosen)
        if chosen == KEEP_PLANNING:
            raise ToolError(
                f"The user chose to keep planning: {STAYS}. Ask what to change in the plan, or "
                "refine it, and call exit_plan_mode again when it is ready."
            )
        target = TARGETS.get(chosen)
        if target is None:
            raise ToolError(f"{NAME}: the client chose an option not offered ({chosen!r}); {STAYS}")
        await ctx.permissions.switch(target)
        allowed = "edit files freely" if target is Mode.AUTO_EDIT else "edit files"
        return ToolOutput(
            [
                TextContent(
                    text=f"The user approved the plan; the session is now in {target} mode: you "
                    f"may {allowed} and run commands (with the user's permission where the mode "
                    "asks). Carry out the plan."
                )
            ]
        )

    async def _ask(self, plan: str | None, arguments: dict[str, object], ctx: ToolContext) -> str:
        asker = ctx.permissions.asker
        if asker is None:
            raise ToolError(f"{NAME}: no client to ask; {STAYS}")
        call = ctx.call or CallInfo("", self.title(arguments), str(self.kind), [], arguments)
        try:
            chosen = await asker.ask(PermissionRequest(call, OPTIONS, message=plan or None))
        except AskFailed as exc:
            raise ToolError(f"{NAME}: the question failed: {exc}; {STAYS}") from exc
        if chosen is None:
            raise ToolError(f"cancelled: the question was cancelled; {STAYS}")
        return chosen
