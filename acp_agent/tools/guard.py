"""``authorize``: the one call a tool makes before it reads, writes a file or runs a command."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from acp_agent.permissions.patterns import Target
from acp_agent.permissions.rules import Effect, Subject, weigh
from acp_agent.tools.base import ToolContext, ToolError
from acp_agent.tools.display import View
from acp_agent.tools.permissions import Action, CallInfo

EDIT_LABEL = "file edits"
READ_LABEL = "reading"


async def authorize(
    ctx: ToolContext,
    action: Action,
    subject: Subject,
    label: str,
    preview: list[View] | None = None,
) -> None:
    """Return when the session's permissions allow the call; else raise ``ToolError`` saying why
    (the call then has not touched anything)."""
    call = ctx.call or CallInfo(id="", title=label, kind=str(action), locations=[], raw_input={})
    decision = await ctx.permissions.decide(action, subject, label, call, preview or [])
    if decision.cancelled:
        raise ToolError(f"cancelled: {decision.reason}; nothing was changed")
    if not decision.allowed:
        raise ToolError(f"permission denied: {decision.reason}; nothing was changed")


def subject(ctx: ToolContext, target: Target, value: str, cwd: Path | None = None) -> Subject:
    """What a call does, placed in the session: ``cwd`` where a command runs (else the
    session's), the roots a command's redirections must stay in."""
    roots = tuple(str(root) for root in ctx.all_roots())
    return Subject(target, value, str(cwd or ctx.cwd), roots)


async def authorize_edit(ctx: ToolContext, path: Path, views: list[View]) -> None:
    """A file write at the resolved ``path`` (``base.confine``), showing ``views``."""
    await authorize(ctx, Action.EDIT, subject(ctx, Target.EDIT, str(path)), EDIT_LABEL, views)


async def authorize_read(ctx: ToolContext, path: Path) -> None:
    """A read at the resolved ``path``: allowed by every mode, so only a ``read(GLOB)`` rule
    refuses or asks. Skipped without a rule about reads (no cost for the common case)."""
    if any(rule.pattern.target is Target.READ for rule in ctx.permissions.rules.listed()):
        label = f"reading {path.name or path}"
        await authorize(ctx, Action.READ, subject(ctx, Target.READ, str(path)), label)


def withheld_reads(ctx: ToolContext) -> Callable[[Path], bool] | None:
    """For a tool that reads many files at once (``search``): which resolved paths it must
    skip, those a ``deny`` or ``ask`` read rule names (it cannot stop to ask for each file);
    ``None`` when no rule is about reads."""
    rules = ctx.permissions.rules
    if not any(rule.pattern.target is Target.READ for rule in rules.listed()):
        return None
    listed = rules.listed()

    def withheld(path: Path) -> bool:
        verdict = weigh(listed, subject(ctx, Target.READ, str(path)))
        return verdict.effect in (Effect.DENY, Effect.ASK)

    return withheld
