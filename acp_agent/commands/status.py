"""``/status``: the session as it stands, from live state only, answered without a model request.

Not journaled on purpose: it is a snapshot of live state (all of it derivable, or process-local
like token counts), history holds only what the model saw or did, and a status kept there would
go to the model with every later request.
"""

from __future__ import annotations

import msgspec

from acp_agent.tools.task_record import TaskRecord, duration
from acp_agent.turn.vocabulary import TurnUsage


class SessionStatus(msgspec.Struct, frozen=True):
    """What ``/status`` shows; the session layer fills it in (``Session.status``)."""

    session_id: str
    journal: str
    cwd: str
    model: str | None
    mode: str
    thought_level: str | None
    """``None``: the model offers no thinking level."""
    context_window: int
    context_used: int | None
    usage_total: TurnUsage | None
    cost: float
    turns: int
    skills: tuple[str, ...]
    tasks: tuple[TaskRecord, ...] = ()
    """The session's background tasks (``/tasks`` lists them too)."""
    now_ms: int = 0
    """When the status was taken (a running task's age)."""


def status_text(status: SessionStatus) -> str:
    window, used = status.context_window, status.context_used
    context = (
        f"{used} of {window} tokens ({used * 100 // max(window, 1)}%) at the last request"
        if used is not None
        else f"no request reported usage yet (window {window} tokens)"
    )
    total, cost = status.usage_total, status.cost
    tokens = (
        f"{total.input_tokens} in, {total.output_tokens} out"
        + (f", {total.reasoning_tokens} reasoning" if total.reasoning_tokens else "")
        + (f", {total.cached_tokens} cached" if total.cached_tokens else "")
        if total is not None
        else "none reported"
    )
    lines = [
        f"Session: {status.session_id}",
        f"Journal: {status.journal}",
        f"Working directory: {status.cwd}",
        f"Model: {status.model or 'the default'}",
        f"Mode: {status.mode}",
        f"Thinking level: {status.thought_level or 'not offered here'}",
        f"Context: {context}",
        f"Tokens since this process opened the session: {tokens}",
        f"Cost: {f'${cost:.4f}' if cost else 'none reported'}",
        f"Turns: {status.turns}",
        f"Skills: {', '.join('/' + s for s in status.skills) or 'none'}",
        tasks_text(status),
    ]
    return "\n".join(lines)


def tasks_text(status: SessionStatus) -> str:
    """``/tasks`` (and ``/status``'s last lines): each background task, its state and command."""
    if not status.tasks:
        return "No background tasks in this session."
    lines = [f"Background tasks ({sum(r.running for r in status.tasks)} running):"]
    for record in status.tasks:
        ran = duration(record, status.now_ms)
        lines.append(f"- {record.id}: {record.state()}, ran {ran}: $ {record.command}")
    return "\n".join(lines)
