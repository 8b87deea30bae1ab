"""Subagents (contract §12): an ``agent`` call runs a child session of the session layer.

Theory of operation
-------------------
``SessionSubagents.run`` creates the child with ``Sessions.create`` (so its journal is a session
like any other: durable, listed, loadable), links it to its parent in the child's side file
``subagent.json`` (``{parentSessionId, description, depth}``, fsynced: ``session/list`` reads it
for ``_meta.acp_agent.parentSessionId``), equips it (``_equip``), tells the parent's card its id
(a ``ChildView``: ``_meta.acp_agent.childSessionId``, live at once and again in the result, so
``session/load`` shows it too), sends the brief as its first prompt and waits for the turn's
end. Its last assistant text (at most ``ANSWER_LIMIT`` characters) is the tool result, which
names the child's session id; a failed, refused or cancelled child makes it an error.

The child is equipped from its parent: the parent's built-in tools (minus ``ask_user``) narrowed
by the call's ``tools``, and no ``agent`` at the deepest level; the parent's mode to start
from; its permissions share the parent's remembered answers and ask through the parent's
client session (``tools/subagent.py``'s ``NamedAsker``: the title names the subagent). The
child works on local files and processes (no client ``fs``/terminal of its own: the client
does not know its session) and its live updates are not sent; its progress goes to the
parent's card (``_Tap``) and all of it is in its journal.

A cancelled call (the parent's turn was cancelled, the parent is being closed) cancels the
child's turn and waits for its end, shielded (at most ``CANCEL_WAIT_S``); the child is closed
on every way out, so its journal is released and complete.

Traces (``acp_agent/telemetry``): a ``subagent`` span covers the run, a child of the call's
``tool.call`` span (``telemetry.current()`` in the tool's task); it is current while the child
is made, so the child's actor takes it as its turns' parent (``turn/tracing.py``).
"""

from __future__ import annotations

import os
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, Protocol

import anyio
import msgspec

from acp_agent import telemetry
from acp_agent.journal.events import (
    AssistantMessage,
    Entry,
    SessionHeader,
    TextPart,
    ToolCall,
    ToolCallPart,
)
from acp_agent.journal.paths import session_dir
from acp_agent.logs import get_logger
from acp_agent.model.base import Usage
from acp_agent.tools.base import AgentArgs, ToolContext, ToolError, ToolOutput
from acp_agent.tools.display import ChildView, shown_as
from acp_agent.tools.permissions import CallInfo, Mode, Permissions
from acp_agent.tools.subagent import MAX_DEPTH, NAME, NamedAsker
from acp_agent.turn.compaction import CompactionProgress
from acp_agent.turn.ports import Notice, SessionObserver
from acp_agent.turn.vocabulary import Failed, Finished, Outcome, Refused, StopReason


class Session(Protocol):
    """What a subagent run needs of a session (``service.Session``; a protocol, because
    ``service.py`` builds this module's runner for each session it starts)."""

    @property
    def id(self) -> str: ...
    @property
    def header(self) -> SessionHeader: ...
    @property
    def entries(self) -> list[Entry]: ...
    @property
    def mode(self) -> Mode: ...
    @property
    def tool_names(self) -> list[str]: ...
    async def set_mode(self, mode: Mode) -> None: ...
    async def send(self, prompt: str) -> Pending: ...
    async def cancel(self) -> None: ...
    def equip_as_subagent(
        self,
        allowed: set[str],
        permissions: Permissions,
        subagents: SessionSubagents | None,
        observer: SessionObserver,
    ) -> None: ...


class Pending(Protocol):
    async def outcome(self) -> Outcome: ...


class Sessions(Protocol):
    @property
    def state_dir(self) -> Path: ...
    async def create(self, cwd: str) -> Any: ...
    def close(self, session: Any) -> Coroutine[Any, Any, None]: ...


log = get_logger("acp_agent.sessions")

LINK_FILE = "subagent.json"
ANSWER_LIMIT = 16_000
CANCEL_WAIT_S = 10.0
_NEVER_FOR_CHILDREN = frozenset({"ask_user"})
CHILD_SESSION_ID = "subagent.session.id"
SUBAGENT_DEPTH = "subagent.depth"
SUBAGENT_ERROR = "subagent.is_error"


class Link(msgspec.Struct, frozen=True, rename="camel"):
    parent_session_id: str
    description: str
    depth: int


_LINK = msgspec.json.Decoder(Link)


def read_link(directory: Path) -> Link | None:
    try:
        return _LINK.decode((directory / LINK_FILE).read_bytes())
    except (OSError, msgspec.DecodeError):
        return None


def _write_link(directory: Path, link: Link) -> None:
    fd = os.open(directory / LINK_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, msgspec.json.encode(link))
        os.fsync(fd)
    finally:
        os.close(fd)


class SessionSubagents:
    """The ``Subagents`` of one session at ``depth`` (0: a top-level session)."""

    def __init__(self, sessions: Sessions, parent: Session, depth: int) -> None:
        self.sessions = sessions
        self.parent = parent
        self.depth = depth

    async def run(self, call: CallInfo, args: AgentArgs, ctx: ToolContext) -> ToolOutput:
        allowed = self._allowed(args.tools)
        attributes: telemetry.Attributes = {
            telemetry.SESSION_ID: self.parent.id,
            SUBAGENT_DEPTH: self.depth + 1,
        }
        span = telemetry.start(telemetry.SpanName.SUBAGENT, attributes)
        try:
            with telemetry.inside(span):  # the child's turns are this span's children
                child = await self.sessions.create(self.parent.header.cwd)
            span.set({CHILD_SESSION_ID: child.id})
            output = await self._run(child, allowed, call, args, ctx)
            span.set({SUBAGENT_ERROR: output.is_error})
            return output
        finally:
            span.end()

    async def _run(
        self, child: Any, allowed: set[str], call: CallInfo, args: AgentArgs, ctx: ToolContext
    ) -> ToolOutput:
        link = Link(self.parent.id, args.description, self.depth + 1)
        directory = session_dir(self.sessions.state_dir, child.id)
        log.info("subagent_started", session_id=self.parent.id, child=child.id, call_id=call.id)
        try:
            await anyio.to_thread.run_sync(_write_link, directory, link)
            await self._equip(child, allowed, args.description, call, ctx)
            if ctx.progress is not None:
                await ctx.progress.show(call.id, [ChildView(child.id, args.description)])
            outcome = await _run_child(child, args.prompt)
        finally:
            with anyio.CancelScope(shield=True):
                await self.sessions.close(child)
        return _result(child, args.description, outcome)

    def _allowed(self, wanted: list[str] | None) -> set[str]:
        """The parent's built-in tools, narrowed to ``wanted``; unknown names are refused."""
        own = set(self.parent.tool_names) - _NEVER_FOR_CHILDREN
        if self.depth + 1 >= MAX_DEPTH:
            own.discard(NAME)
        if wanted is None:
            return own
        unknown = sorted(set(wanted) - own)
        if unknown:
            raise ToolError(
                f"{NAME}: tools not available to a subagent here: {', '.join(unknown)} "
                f"(available: {', '.join(sorted(own))})"
            )
        return set(wanted)

    async def _equip(
        self,
        child: Session,
        allowed: set[str],
        description: str,
        call: CallInfo,
        ctx: ToolContext,
    ) -> None:
        await child.set_mode(self.parent.mode)
        parent_permissions = ctx.permissions
        asker = parent_permissions.asker
        named = NamedAsker(asker, description, child.id) if asker is not None else None
        permissions = parent_permissions.for_child(named, child.id)
        deeper = self.depth + 1 < MAX_DEPTH
        child.equip_as_subagent(
            allowed,
            permissions,
            SessionSubagents(self.sessions, child, self.depth + 1) if deeper else None,
            _Tap(ctx, call.id, child.id),
        )


async def _run_child(child: Session, prompt: str) -> Outcome:
    """The child's turn, to its end. Cancelled (the parent's turn was), the child's turn is
    cancelled and waited for, and the call answers ``cancelled`` rather than raising: so its
    result, journaled, still names the child (``childSessionId`` on a later load too). Nothing
    is awaited after that inside the cancelled scope."""
    pending = await child.send(prompt)
    try:
        return await pending.outcome()
    except anyio.get_cancelled_exc_class():
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_WAIT_S):
            await child.cancel()
            await pending.outcome()
        log.info("subagent_cancelled", child=child.id)
        return Finished(StopReason.CANCELLED)


def _result(child: Session, description: str, outcome: Outcome) -> ToolOutput:
    view = ChildView(child.id, description)
    match outcome:
        case Finished(stop=StopReason.CANCELLED):
            text = f"subagent {child.id} (“{description}”) failed: it was cancelled"
            return ToolOutput([shown_as(text, view)], is_error=True)
        case Finished(stop=stop):
            answer = _bounded(last_answer(child.entries))
            note = "" if stop is StopReason.END_TURN else f" (it stopped: {stop})"
            text = f"subagent {child.id} (“{description}”) answered{note}:\n{answer}"
            return ToolOutput([shown_as(text, view)], is_error=False)
        case Failed(message=error) | Refused(reason=error):
            text = f"subagent {child.id} (“{description}”) failed: {error}"
            return ToolOutput([shown_as(text, view)], is_error=True)


def last_answer(entries: list[Entry]) -> str:
    """The text of the child's last assistant message that has any."""
    for entry in reversed(entries):
        event = entry.event
        if isinstance(event, AssistantMessage):
            text = "".join(p.text for p in event.content if isinstance(p, TextPart))
            if text.strip():
                return text
    return "(it gave no text answer)"


def _bounded(text: str) -> str:
    if len(text) <= ANSWER_LIMIT:
        return text
    return f"{text[:ANSWER_LIMIT]}… [{len(text) - ANSWER_LIMIT:,} more characters]"


class _Tap:
    """The child's observer: nothing goes to the wire under the child's id; each journaled
    step shows on the parent's card (``ToolProgress.output``)."""

    def __init__(self, ctx: ToolContext, parent_call_id: str, child_id: str) -> None:
        self.progress = ctx.progress
        self.call_id = parent_call_id
        self.child_id = child_id
        self.tools: list[str] = []
        self.said = ""
        self._streaming = ""

    async def appended(self, entry: Entry) -> None:
        """Each tool call and answer of the child, on the parent's card."""
        event = entry.event
        if isinstance(event, ToolCall):
            self.tools.append(event.name)
        elif isinstance(event, AssistantMessage):
            text = "".join(p.text for p in event.content if isinstance(p, TextPart))
            self.said = text.strip()[-500:] or self.said
        else:
            return
        if self.progress is not None:
            await self.progress.output(self.call_id, self._summary())

    def _summary(self) -> str:
        lines = [f"subagent {self.child_id}: {len(self.tools)} tool calls"]
        if self.tools:
            lines[0] += f" (last: {self.tools[-1]})"
        if self.said:
            lines.append(self.said)
        return "\n".join(lines)

    async def text_delta(self, message_id: str, text: str) -> None:
        """The child's answer as it streams (the journaled message replaces it)."""
        if message_id != self._streaming:
            self._streaming, self.said = message_id, ""
        self.said = (self.said + text)[-500:]
        if self.progress is not None:
            await self.progress.output(self.call_id, self._summary())

    async def thought_delta(self, message_id: str, text: str) -> None:
        pass

    async def tool_started(self, call: ToolCallPart) -> None:
        pass

    async def journal_error(self, error: str, unflushed: int) -> None:
        log.warning("subagent_journal_error", child=self.child_id, error=error)

    async def titled(self, title: str) -> None:
        pass

    async def compaction_progress(
        self, compaction_id: str, progress: CompactionProgress, error: str | None
    ) -> None:
        pass

    async def usage(self, usage: Usage, context_window: int) -> None:
        pass

    async def note(self, text: str) -> None:
        pass

    async def notice(self, notice: Notice) -> None:
        pass

    async def command_answer(self, text: str, command: str) -> None:
        pass
